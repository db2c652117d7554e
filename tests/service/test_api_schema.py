"""schemathesis against the live OpenAPI of `assay serve`: no 5xx, no response outside the schema.

Every check schemathesis has runs (coverage, fuzzing and stateful phases)
except ``use_after_free``: ``DELETE /runs/{id}`` cancels a run and its record
stays readable with the status ``cancelled`` (status is honest; a cancelled
run is not a deleted one), which that check takes for a resource that should
be gone; nor ``ensure_resource_availability``: a run's report
(``GET /runs/{id}/report``, ``.../report/verify``) is a 404 ``SERVICE_REPORT_NOT_FOUND`` until its agent
writes one, which that check takes for a run that was not created (the run itself is read back by the
tests of tests/service/test_api.py). ``POST /files`` is left out: a schema-valid body is any bytes under
any name, and only a real data file is accepted (tests/files/test_files_service.py
uploads them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from tests.service.conftest import LiveServer

pytest.importorskip("fastapi")
pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path):
    cli = shutil.which("schemathesis") or str(Path(sys.executable).with_name("schemathesis"))
    require(Path(cli).exists(), "the schemathesis command (test extra)")
    server = LiveServer(
        tmp_path,
        {
            "ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "100000",
            "ASSAY_SERVICE_MAX_RUNS_PER_TOKEN": "1000",
            "ASSAY_SERVICE_MAX_QUEUED": "1000",
        },
    )
    try:
        out = subprocess.run(
            [
                cli,
                "run",
                f"{server.url}/openapi.json",
                "-H",
                f"Authorization: Bearer {server.alice}",
                "--checks",
                "all",
                "--exclude-checks",
                "use_after_free,ensure_resource_availability",
                "--max-examples",
                "30",
                "--no-color",
                "--exclude-name",
                "POST /files",  # a valid body is a real data file: tests/files uploads them
                "--seed",
                "19",
                "--report-dir",
                str(tmp_path / "report"),
            ],
            capture_output=True,
            text=True,
            timeout=800,
            check=False,
            cwd=tmp_path,
        )
    finally:
        server.stop()
    summary = out.stdout[out.stdout.rfind("SUMMARY") :]
    print(summary)
    assert out.returncode == 0, summary[-4000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert (
        generated and generated.group(1) == generated.group(2) and int(generated.group(1)) > 200
    ), summary
    assert "Tested: 11" in summary or re.search(r"Tested: (\d+)", summary)
