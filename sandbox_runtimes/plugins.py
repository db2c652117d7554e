"""The sandbox plugins' entry points: thin, so kernel start-up imports no sandbox code.

Each runtime plugin (``docker``, ``podman``, ``nerdctl``, ``local``) registers
its runtime class as a :class:`assay.Lazy` (name, ``module:Class`` path and
the ``isolated`` flag the kernel reads before importing); the runtime module,
:mod:`assay.plugins.sandbox` and the engine SDKs load when a sandbox is first used.
``sandbox_cli`` adds ``assay sandbox`` (click and :mod:`assay.sandbox_runtimes.cli`
load only when the command line is built). These are the only hook
implementations of the sandbox plugins: the runtime modules and ``cli`` hold
none. A host wanting one runtime passes its object,
``Kernel(plugins=[assay.sandbox_runtimes.plugins.podman])``.
"""

from __future__ import annotations

from assay import Lazy, hookimpl


class RuntimePlugin:
    """The plugin of one sandbox runtime: registers ``module:cls`` lazily as ``name``."""

    def __init__(self, name: str, target: str, *, isolated: bool) -> None:
        self.name = name
        self.target = target
        self.isolated = isolated

    def __repr__(self) -> str:
        return f"<sandbox runtime plugin {self.name!r}: {self.target}>"

    @hookimpl
    def register_sandbox_runtimes(self, register):
        register(Lazy(self.target, name=self.name, isolated=self.isolated))


class SandboxCliPlugin:
    """The ``assay sandbox`` commands."""

    @hookimpl
    def register_commands(self, cli):
        from .cli import sandbox_group

        cli.add_command(sandbox_group)


docker = RuntimePlugin("docker", "assay.sandbox_runtimes.docker:DockerRuntime", isolated=True)
podman = RuntimePlugin("podman", "assay.sandbox_runtimes.podman:PodmanRuntime", isolated=True)
nerdctl = RuntimePlugin("nerdctl", "assay.sandbox_runtimes.nerdctl:NerdctlRuntime", isolated=True)
local = RuntimePlugin("local", "assay.sandbox_runtimes.local:LocalRuntime", isolated=False)
sandbox_cli = SandboxCliPlugin()
