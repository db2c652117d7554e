"""The hook specifications: a table of contents of assay.

Every hook hands the plugin a ``register`` callback instead of asking for a
return value, so the kernel validates each object, decides its name and
records which plugin it came from. An implementation declares only the
arguments it uses (any of ``register``, ``settings`` - the kernel's
:class:`assay.Settings` - and ``kernel``); new arguments can be added here
without breaking plugins. The kernel calls each hook one plugin at a time,
so a plugin that fails is rolled back on its own (``register_commands`` runs
only when the command line is built).

Every ``register`` except ``register_resource_types``'s also takes a
:class:`assay.Lazy` descriptor - a name, a ``"package.module:attr"`` path and
the attributes the kernel reads before importing - so a plugin module stays
thin and the object's module loads on first use. A lazy object that fails to
load fails its plugin (``PLUGIN_LOAD_FAILED``).
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("assay")
hookimpl = pluggy.HookimplMarker("assay")


@hookspec
def register_resource_types(register, settings, kernel):
    """Add resource types beyond database, tool, knowledge and pack.

    ``register(name: str)``: a new lower-case type name.
    """


@hookspec
def register_resources(register, settings, kernel):
    """Add resources (databases, knowledge, packs) the model can be given.

    ``register(resource: kernel.Resource)``; ``settings`` is the kernel's
    :class:`assay.Settings`, for plugins whose resources come from config.
    A lazy resource declares its type: ``Lazy(path, name=..., type="knowledge")``.
    """


@hookspec
def register_tools(register, settings, kernel):
    """Add tools the model can call.

    ``register(tool)`` takes a :class:`assay.BaseTool`, a plain function
    (wrapped with :func:`assay.tool`), a :class:`assay.Lazy` or a
    ``"package.module:attr"`` string (short for ``Lazy(that string)``): a
    lazy tool's name is listed at once, and it is imported when it is first
    looked up or listed (``kernel.get_tool``, ``kernel.tools``, a call).
    Names must be unique across plugins.
    """


@hookspec
def register_database_engines(register, settings, kernel):
    """Add SQL engines that datasource URLs can name.

    ``register(engine)`` takes an object with ``name`` (the URL scheme family,
    such as ``"sqlite"``) and ``schemes`` (URL schemes it accepts) that
    satisfies :class:`assay.kernel.database_engine.DatabaseEngine`: the SQL
    plugin drives it through those methods (read-only pool, per-statement
    begin/end, cancel, streaming, introspect).
    """


@hookspec
def register_knowledge_retrievers(register, settings, kernel):
    """Add second rankers that knowledge searches fuse with BM25 (an embedding search, say).

    ``register(retriever)`` takes an object with a unique ``name`` and
    ``retrieve(query, passages, k) -> [(passage_id, score), ...]``, best first
    (:mod:`assay.plugins.knowledge.retrievers`).
    """


@hookspec
def register_sandbox_runtimes(register, settings, kernel):
    """Add sandbox runtimes (container engines or the local fallback).

    ``register(runtime_cls)`` takes a :class:`assay.kernel.sandbox.SandboxRuntime`
    subclass with a unique ``name`` and an ``isolated`` flag (a lazy one
    declares it: ``Lazy(path, name=..., isolated=True)``).
    """


@hookspec
def register_artifact_stores(register, settings, kernel):
    """Add places where evidence (artifact content) can be kept.

    ``register(store_cls)`` takes a :class:`assay.kernel.evidence.ContentStore`
    subclass with a unique ``name``; ``ASSAY_ARTIFACT_STORE`` chooses one.
    """


@hookspec
def register_subsystems(register, settings, kernel):
    """Add subsystems: objects one per kernel, made on first use and closed with it.

    ``register(subsystem)`` takes an :class:`assay.kernel.subsystems.Subsystem`:
    a unique ``name`` and a ``factory`` (a callable taking the kernel, or its
    ``"package.module:attr"`` path, imported on first use). The kernel reaches
    it as ``kernel.<name>`` or ``kernel.subsystem(name)`` (``kernel.runs``,
    ``kernel.sandbox``) and closes it in ``kernel.close()``.
    """


@hookspec
def register_report_renderers(register, settings, kernel):
    """Add renderers that turn a report document citing artifacts into output.

    ``register(renderer)`` takes an :class:`assay.kernel.reports.ReportRenderer`:
    an object with ``name``, ``media_type`` and ``render(document, reader) ->
    bytes``, where ``document`` is an :class:`assay.kernel.reports.ReportDocument`
    (or its JSON form) and ``reader`` an artifact sink, catalog, run or kernel.
    """


@hookspec
def register_models(register, settings, kernel):
    """Add model providers that drive the agent.

    ``register(model_cls)`` takes a :class:`assay.kernel.models.Model` subclass with a
    unique ``model_id``.
    """


@hookspec
def register_commands(cli, kernel):
    """Add sub-commands to the ``assay`` command line.

    ``cli`` is the root :class:`click.Group`; call ``cli.add_command(...)`` or
    use ``@cli.command()``.
    """
