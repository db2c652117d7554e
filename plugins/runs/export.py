"""A run as one zip that someone else can check: transcript, artifacts and a manifest of hashes.

Layout::

    manifest.json              format, run id, every file's SHA-256 and size, every artifact; a follow-up's
                               thread (its chain of run ids) and the earlier runs' artifacts it cites
    run.json                   the run record (question, model, status, answer, totals)
    transcript.jsonl           every event of the run, in order
    artifacts/records.jsonl    the catalog record of each artifact
    artifacts/content/SHA256   each artifact's stored bytes (named by their hash)

:func:`verify_bundle` (``assay artifacts verify BUNDLE.zip``) re-hashes every
file against the manifest and every artifact's content against its record,
and checks that each artifact the transcript cites is in the bundle.
"""

from __future__ import annotations

import hashlib
import json
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.kernel.errors import AssayError

if TYPE_CHECKING:
    from assay.kernel.protocols import KernelAPI as Kernel

BUNDLE_FORMAT = "assay-run-export/1"
RUN_NOT_FOUND = "RUN_NOT_FOUND"
RUN_EXPORT_FAILED = "RUN_EXPORT_FAILED"
_CHUNK = 1 << 20


@dataclass
class ExportReport:
    path: Path
    run_id: str
    artifacts: int
    missing: list[str] = field(default_factory=list)  # cited artifacts the store no longer has


def export_run(kernel: Kernel, run_id: str, path: Path | str) -> ExportReport:
    """Write run ``run_id`` with its artifacts to the zip ``path``.

    Raises ``RUN_NOT_FOUND``; an artifact whose content is gone or altered
    raises ``RUN_EXPORT_FAILED`` (a bundle never carries evidence that does
    not hash to its record).
    """
    from assay.kernel.evidence.readback import verify

    record = kernel.runs.get(run_id)
    if record is None:
        raise AssayError(
            RUN_NOT_FOUND, f"no run {run_id!r} in the runs store", "List runs with `assay runs ls`."
        )
    events = list(kernel.runs.events(run_id))
    catalog = kernel.evidence.catalog
    catalog.import_shared(run_id)
    records = {r.artifact_id: r for r in catalog.iter(run_id)}
    missing = []
    for artifact_id in cited_artifacts(record.artifact_ids, [e.model_dump() for e in events]):
        if artifact_id not in records:
            found = catalog.get(artifact_id)
            if found is None:
                missing.append(artifact_id)
            else:
                records[artifact_id] = found
    from .thread import cited_in_thread

    chain, from_thread = cited_in_thread(kernel, record, [e.model_dump() for e in events], records)
    records.update(
        from_thread
    )  # a follow-up's bundle carries the earlier evidence it cites: it verifies alone
    if missing:
        raise AssayError(
            RUN_EXPORT_FAILED,
            f"run {run_id} cites artifacts the store does not hold: " + ", ".join(missing[:10]),
            "Check ASSAY_HOME and `assay artifacts verify`.",
        )
    path = Path(path)
    files: dict[str, dict[str, Any]] = {}
    temp = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(temp, "w", compression=zipfile.ZIP_DEFLATED) as bundle:

        def put(name: str, data: bytes) -> None:
            bundle.writestr(name, data)
            files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}

        put("run.json", json.dumps(record.model_dump(), default=str, indent=2).encode())
        put(
            "transcript.jsonl",
            b"".join(json.dumps(e.model_dump(), default=str).encode() + b"\n" for e in events),
        )
        put(
            "artifacts/records.jsonl",
            b"".join(r.model_dump_json().encode() + b"\n" for r in records.values()),
        )
        for artifact in records.values():
            name = f"artifacts/content/{artifact.sha256}"
            if name in files:
                continue
            try:
                verify(catalog, artifact)
            except AssayError as exc:
                temp.unlink(missing_ok=True)
                raise AssayError(
                    RUN_EXPORT_FAILED,
                    f"artifact {artifact.artifact_id}: {exc.message}",
                    "Run `assay artifacts verify`; the bundle was not written.",
                ) from None
            with catalog.store.open_content(artifact.sha256) as src, bundle.open(name, "w") as out:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
            files[name] = {"sha256": artifact.sha256, "bytes": artifact.byte_size}
        manifest = {
            "format": BUNDLE_FORMAT,
            "run_id": run_id,
            "exported_at": time.time(),
            "files": files,
            "artifacts": [
                {
                    "artifact_id": a.artifact_id,
                    "sha256": a.sha256,
                    "byte_size": a.byte_size,
                    "kind": a.kind,
                    "status": a.status,
                    "content": f"artifacts/content/{a.sha256}",
                }
                for a in records.values()
            ],
        }
        if len(chain) > 1:
            manifest["thread"] = {"chain": chain, "cited": list(from_thread)}
        bundle.writestr("manifest.json", json.dumps(manifest, indent=2))
    temp.replace(path)
    return ExportReport(path=path, run_id=run_id, artifacts=len(records))


def cited_artifacts(record_ids: list[str], events: list[dict[str, Any]]) -> list[str]:
    """Every artifact id the run record or its tool calls name, in order, once."""
    seen: dict[str, None] = dict.fromkeys(record_ids)
    for event in events:
        if event.get("kind") == "tool_finished":
            seen.update(dict.fromkeys(event.get("data", {}).get("artifact_ids") or []))
    return list(seen)


@dataclass
class BundleReport:
    run_id: str = ""
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


def is_bundle(path: Path | str) -> bool:
    return zipfile.is_zipfile(path)


def verify_bundle(path: Path | str) -> BundleReport:
    """Check an exported run: every file against the manifest, every artifact against its record."""
    report = BundleReport()
    try:
        bundle = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        report.problems.append(f"not a readable zip: {exc}")
        return report
    with bundle:
        try:
            manifest = json.loads(bundle.read("manifest.json"))
        except (KeyError, ValueError) as exc:
            report.problems.append(f"manifest.json missing or not JSON: {exc}")
            return report
        if manifest.get("format") != BUNDLE_FORMAT:
            report.problems.append(f"unknown bundle format {manifest.get('format')!r}")
            return report
        report.run_id = str(manifest.get("run_id", ""))
        listed = manifest.get("files") or {}
        names = set(bundle.namelist()) - {"manifest.json"}
        for name in sorted(names - set(listed)):
            report.problems.append(f"UNLISTED {name}: in the zip but not in the manifest")
        for name, entry in sorted(listed.items()):
            report.checked += 1
            if name not in names:
                report.problems.append(f"MISSING  {name}")
                continue
            digest = _hash_member(bundle, name)
            if digest != entry.get("sha256"):
                report.problems.append(
                    f"CORRUPT  {name}: sha256 {digest} != manifest {entry.get('sha256')}"
                )
        records = {}
        if "artifacts/records.jsonl" in names:
            for line in bundle.read("artifacts/records.jsonl").splitlines():
                if line.strip():
                    item = json.loads(line)
                    records[item["artifact_id"]] = item
        for artifact in manifest.get("artifacts") or []:
            artifact_id = artifact.get("artifact_id")
            record = records.get(artifact_id)
            if record is None or record.get("sha256") != artifact.get("sha256"):
                report.problems.append(
                    f"RECORD   {artifact_id}: its catalog record is missing or disagrees"
                )
            elif (
                artifact.get("content") not in listed
                or listed[artifact["content"]]["sha256"] != record["sha256"]
            ):
                report.problems.append(
                    f"CONTENT  {artifact_id}: content missing or not the recorded hash"
                )
        if "run.json" in names and "transcript.jsonl" in names:
            run = json.loads(bundle.read("run.json"))
            events = [
                json.loads(line)
                for line in bundle.read("transcript.jsonl").splitlines()
                if line.strip()
            ]
            thread_cited = (manifest.get("thread") or {}).get("cited") or []
            for artifact_id in (
                cited_artifacts(run.get("artifact_ids") or [], events) + thread_cited
            ):
                if artifact_id not in records:
                    report.problems.append(
                        f"CITED    {artifact_id}: the run cites it but the bundle lacks it"
                    )
    return report


def _hash_member(bundle: zipfile.ZipFile, name: str) -> str:
    h = hashlib.sha256()
    with bundle.open(name) as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()
