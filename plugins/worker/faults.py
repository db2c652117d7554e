"""Fault points: where a test may kill this process to prove that what follows is recovered.

``ASSAY_TEST_FAULT=NAME`` makes :func:`fault_point` ``NAME`` end the process at
once (``os._exit``, exit status 70: no cleanup, no flush, as a SIGKILL would),
and the test then checks that no run is lost or stuck. Unset (always, outside
tests) a fault point is one dictionary lookup.

Points: ``serve_recorded`` (``assay serve``, after a run is recorded and
before its message is enqueued), ``worker_ending`` (``assay worker``, inside
the transaction that ends a run's lease, before its final event is written).
"""

from __future__ import annotations

import os

FAULT_EXIT = 70


def fault_point(name: str) -> None:
    if os.environ.get("ASSAY_TEST_FAULT") == name:
        os._exit(FAULT_EXIT)
