"""The ``s3_store`` plugin: registers the S3-compatible artifact store, ``s3``.

Thin on purpose (kernel start-up imports it): the store and its settings,
:mod:`assay.plugins.artifact_stores.s3_store`, load when ``ASSAY_ARTIFACT_STORE=s3``
is first used (and boto3 only when the store first talks to the bucket).
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl


def __getattr__(name: str) -> Any:  # the classes, for code that imports them from here
    if name in ("S3ContentStore", "S3Settings"):
        from . import s3_store

        return getattr(s3_store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_artifact_stores(register):
    register(Lazy("assay.plugins.artifact_stores.s3_store:S3ContentStore", name="s3"))
