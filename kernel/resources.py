"""Resources: what the model is told about.

A database, a knowledge base or a pack of them describe themselves to the
model (:meth:`Resource.get_prompt`); the system prompt is built from those
descriptions. A resource is not run: the work is done through the tools that
plugins register for it (a database is queried through ``sql_query``), and
tools (:mod:`assay.kernel.tools`) are called, not described here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar


class ResourceType(str):
    """The kind of a resource. The three built-in kinds are class attributes;
    plugins add more through the ``register_resource_types`` hook. (Tools are
    not resources, so there is no ``tool`` kind.)"""

    DATABASE: ClassVar[ResourceType]
    KNOWLEDGE: ClassVar[ResourceType]
    PACK: ClassVar[ResourceType]

    def __repr__(self) -> str:
        return f"ResourceType({str.__str__(self)!r})"


ResourceType.DATABASE = ResourceType("database")
ResourceType.KNOWLEDGE = ResourceType("knowledge")
ResourceType.PACK = ResourceType("pack")

BUILTIN_RESOURCE_TYPES = (ResourceType.DATABASE, ResourceType.KNOWLEDGE, ResourceType.PACK)


@dataclass(frozen=True)
class PromptBudget:
    """How much a resource may say about itself in the system prompt, and the question it is for.

    ``question`` (None: a tool host, MCP) lets a resource choose what to say for it: a database
    shows the tables the question needs.
    """

    max_chars: int = 8_000
    question: str | None = None


class Resource:
    """Base class of every resource.

    Subclasses set ``name`` and ``type`` and implement :meth:`get_prompt`.
    """

    name: str = ""
    type: ResourceType = ResourceType.KNOWLEDGE

    @property
    def is_pack(self) -> bool:
        return False

    @property
    def sub_resources(self) -> list[Resource]:
        return []

    def get_prompt(self, budget: PromptBudget | None = None) -> str:
        """Describe this resource to the model, within ``budget``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type}:{self.name}>"


class ResourcePack(Resource):
    """Several resources attached as one."""

    type = ResourceType.PACK

    def __init__(self, name: str, resources: Iterable[Resource], description: str = "") -> None:
        self.name = name
        self.description = description
        self._resources = list(resources)

    @property
    def is_pack(self) -> bool:
        return True

    @property
    def sub_resources(self) -> list[Resource]:
        return list(self._resources)

    def get_prompt(self, budget: PromptBudget | None = None) -> str:
        return build_resource_prompt(self._resources, budget, heading=self.description)


def build_resource_prompt(
    resources: Sequence[Resource], budget: PromptBudget | None = None, heading: str = ""
) -> str:
    """The system-prompt section describing ``resources``.

    The budget is shared: each resource may use an equal share of what is
    left (what one leaves unused goes to those after it), so one large schema
    cannot crowd the others out; a resource that does not fit is named with a
    note instead of being silently dropped.
    """
    budget = budget or PromptBudget()
    parts: list[str] = [heading] if heading else []
    remaining = budget.max_chars - len(heading) - (2 if heading else 0)
    for index, resource in enumerate(resources):
        if remaining <= 0:
            parts.append(
                f"[{resource.type}:{resource.name}] (description omitted: prompt budget exhausted)"
            )
            continue
        share = remaining // (len(resources) - index)
        text = resource.get_prompt(
            PromptBudget(
                max_chars=max(1, share - len(resource.name) - 16), question=budget.question
            )
        )
        block = f"[{resource.type}:{resource.name}]\n{text}".rstrip()
        parts.append(block)
        remaining -= len(block) + 2  # and the blank line joining it
    return "\n\n".join(parts)
