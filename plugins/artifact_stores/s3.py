"""The ``s3_store`` plugin: registers the S3-compatible artifact store, ``s3``.

Thin on purpose (kernel start-up imports it): the store and its settings,
:mod:`assay.plugins.artifact_stores.s3_store`, load when ``ASSAY_ARTIFACT_STORE=s3``
is first used (and boto3 only when the store first talks to the bucket).
The split is kept because importing the store loads the evidence package its
base class lives in (~30 ms measured), which kernel start-up must not.
"""

from __future__ import annotations

from assay import Lazy, hookimpl


@hookimpl
def register_artifact_stores(register):
    register(Lazy("assay.plugins.artifact_stores.s3_store:S3ContentStore", name="s3"))
