"""The service's ``/files`` endpoints: upload (multipart, streamed to disk), list and delete, per owner.

Added to the service's app by :func:`add_file_routes`; every route needs the bearer token like the rest
of the API, and ``owner(request)`` is the token's owner. Another owner's file id answers 404 like an
unknown id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import File, Request, UploadFile  # this module is imported by the service only

from .errors import FILE_NOT_FOUND, FILE_TOO_LARGE, FileError

CHUNK = 1 << 20


class RunUploads:
    """What POST /runs needs of the uploads: the owner's files by id, and a datasource over them."""

    def __init__(self, kernel: Any, store: Any, limits: Any) -> None:
        self.kernel, self.store, self.limits = kernel, store, limits

    def patterns(self, who: str, file_ids: list[str]) -> list[str]:
        """``table=path`` of each of ``who``'s files (FILE_NOT_FOUND for another owner's or an unknown id)."""
        out: list[str] = []
        taken: set[str] = set()
        for file_id in dict.fromkeys(file_ids):
            upload, path = self.store.get(who, file_id)
            table, n = upload.table, 2
            while table in taken:  # two uploads of sales.csv: sales and sales_2
                table, n = f"{upload.table}_{n}", n + 1
            taken.add(table)
            out.append(f"{table}={path}")
        return out

    def open(self, name: str, patterns: list[str]) -> Any:
        """One files datasource over the uploads (their paths are the service's own: no roots check)."""
        from .sources import FileSpec

        specs = [FileSpec(t, (Path(p),)) for t, _, p in (x.partition("=") for x in patterns)]
        return self._resource(name, specs)

    def _resource(self, name: str, specs: list[Any]) -> Any:
        from assay.plugins.sql import kernel_engines, sql_settings

        from .resource import FilesResource

        resource = FilesResource(
            name,
            specs,
            home=self.kernel.settings.home,
            limits=self.limits,
            settings=sql_settings(self.kernel.settings),
            engines=kernel_engines(self.kernel),
            description="the files uploaded for this question",
        )
        # an upload is <owner>/<file id>/<name>: the run's record keeps its id (a follow-up's way back)
        resource.upload_ids = {str(p): p.parent.name for s in specs for p in s.paths}
        return resource

    def inherited(self, who: str, parent_run_id: str, record: dict[str, Any] | None) -> bool:
        """Whether a follow-up gets its parent's uploads (``record``: the parent's files record): each
        must still be one of ``who``'s files (one deleted since: FILE_NOT_FOUND, naming it)."""
        tables = (record or {}).get("tables") or []
        for table in tables:
            for recorded in table.get("files") or []:
                file_id = recorded.get("file_id") or ""
                try:
                    self.store.get(who, file_id)
                except FileError:
                    raise FileError(
                        FILE_NOT_FOUND,
                        f"the run being continued ({parent_run_id}) used the upload "
                        f"{recorded.get('name')!r} ({file_id or 'no id'}), which is not among your "
                        "files any more (deleted)",
                        "Upload it again and pass its id in `files` (a follow-up's own files replace "
                        "its parent's).",
                        details={"file_id": file_id},
                    ) from None
        return bool(tables)

    def reopen(self, who: str, name: str, record: dict[str, Any]) -> Any:
        """A follow-up's uploads: its parent's ``record``, each file found again among ``who``'s by its
        id and checked against the record (:func:`.thread.reopen`)."""
        from .thread import reopen

        def locate(recorded: dict[str, Any]) -> Path:
            return self.store.get(who, recorded.get("file_id") or "")[1]

        return reopen(record, locate, lambda specs: self._resource(name, specs))


def add_file_routes(
    app: Any, kernel: Any, owner: Callable[[Any], str], error: Callable[..., Any]
) -> RunUploads:
    from . import files_settings
    from .catalog import Limits, build
    from .sources import FileSpec
    from .uploads import UploadStore

    fs = files_settings(kernel.settings)
    store = UploadStore(kernel.settings.home, max_bytes=fs.max_upload_bytes)
    limits = Limits(
        max_columns=fs.max_columns,
        max_line_bytes=fs.max_line_bytes,
        max_excel_expanded_bytes=fs.max_excel_expanded_bytes,
    )

    def register(path: Any, table: str) -> list[str]:
        _, manifest = build([FileSpec(table, (path.resolve(),))], kernel.settings.home, limits)
        return [t.name for t in manifest.tables]

    from assay.plugins.service.api_models import ErrorBody

    def body(text: str) -> dict[str, Any]:
        return {"model": ErrorBody, "description": text}

    auth = {401: body("No bearer token, or not a valid one.")}
    missing = {404: body("No such file (or not the token owner's).")}
    bad = {
        400: body(
            "A file assay cannot register (FILE_* code), or a name that is not a plain file name."
        ),
        413: body("Over the upload size limit (FILE_TOO_LARGE)."),
    }

    def refused(exc: FileError) -> Any:
        status = 404 if exc.code == FILE_NOT_FOUND else 413 if exc.code == FILE_TOO_LARGE else 400
        return error(status, exc.code, exc.message, exc.hint)

    @app.post("/files", status_code=201, responses={**auth, **bad}, tags=["files"])
    async def upload_file(request: Request, file: Annotated[UploadFile, File()]) -> Any:
        """Upload a data file (CSV/TSV, Parquet, JSON/NDJSON, Excel); it is checked and registered as a table."""
        declared = int(request.headers.get("content-length") or 0)
        if declared > fs.max_upload_bytes + CHUNK:  # refused before the body is read
            return error(
                413,
                FILE_TOO_LARGE,
                f"the upload declares {declared:,} bytes (the limit is {fs.max_upload_bytes:,})",
                "Upload a smaller file.",
            )

        async def chunks():
            while block := await file.read(CHUNK):
                yield block

        try:
            upload = await store.save(
                owner(request), file.filename or "", chunks(), lambda p, t: register(p, t)
            )
        except FileError as exc:
            return refused(exc)
        finally:
            await file.close()
        return upload.public()

    @app.get("/files", responses=auth, tags=["files"])
    async def list_files(request: Request) -> Any:
        """Your uploaded files, oldest first."""
        return {"files": [u.public() for u in await asyncio.to_thread(store.list, owner(request))]}

    @app.delete("/files/{file_id}", responses={**auth, **missing}, tags=["files"])
    async def delete_file(file_id: str, request: Request) -> Any:
        """Delete one of your files."""
        try:
            return (await asyncio.to_thread(store.delete, owner(request), file_id)).public()
        except FileError as exc:
            return refused(exc)

    return RunUploads(kernel, store, limits)
