"""The knowledge plugin: business definitions the agent can search and cite.

A knowledge base (Markdown, text, CSV data dictionaries, PDFs) is a
resource of type ``knowledge``, configured by ``ASSAY_KNOWLEDGE`` or
``[knowledge.bases.NAME]``; it is indexed into SQLite FTS5 under
``ASSAY_HOME/knowledge/`` (:mod:`.index`) and searched by the
``knowledge_search`` tool, whose results are captured as ``knowledge``
artifacts (:mod:`.tools`). A second ranker (an embedding search, say) plugs
in through ``register_knowledge_retrievers`` (:mod:`.retrievers`). This
module stays light: nothing below is imported unless a base is configured
or the tool is first used. See docs/knowledge.md.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl
from assay.kernel.log import get_logger

log = get_logger("assay.knowledge")

SETTINGS_ENV_PREFIX = "ASSAY_KNOWLEDGE"  # ASSAY_KNOWLEDGE itself and every ASSAY_KNOWLEDGE_*


def knowledge_settings(settings: Any) -> Any:
    from .settings import KnowledgeSettings

    return settings.section("knowledge", KnowledgeSettings)


def kernel_retrievers(kernel: Any) -> list[Any]:
    """The second rankers registered with ``register_knowledge_retrievers``."""
    return [retriever for _, retriever in kernel.registry("knowledge_retrievers").items()]


def open_base(name: str, config: Any, *, kernel: Any) -> Any:
    """A :class:`~.resource.KnowledgeBase` with the kernel's settings, home and retrievers."""
    from .resource import KnowledgeBase

    return KnowledgeBase(
        name,
        config,
        home=kernel.settings.home,
        settings=knowledge_settings(kernel.settings),
        retrievers=lambda: kernel_retrievers(kernel),
    )


@hookimpl
def register_tools(register):
    register(
        Lazy(
            "assay.plugins.knowledge.tools:knowledge_search_tool",
            name="knowledge_search",
            factory=True,
        )
    )


@hookimpl
def register_resources(register, settings, kernel):
    settings.declare_section("knowledge", "assay.plugins.knowledge.settings:KnowledgeSettings")
    if not settings.provided("knowledge", SETTINGS_ENV_PREFIX):
        return  # nothing configures a base: import nothing
    for name, config in knowledge_settings(settings).bases.items():
        register(open_base(name, config, kernel=kernel))


@hookimpl
def register_commands(cli):
    from .cli import add_commands

    add_commands(cli)
