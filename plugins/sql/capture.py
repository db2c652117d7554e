"""The one place the SQL plugin hands results to the evidence store.

``assay.kernel.evidence.capture_sql_execution`` (see /contracts) streams the rows
into a content-addressed artifact. A capture that fails is reported as
ARTIFACT_CAPTURE_FAILED: the query ran, no snapshot was saved; one refused by
the run's (or, in the service, the owner's) evidence quota as
ARTIFACT_QUOTA_EXCEEDED.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.kernel.settings import mask_url

from .errors import ARTIFACT_CAPTURE_FAILED, ARTIFACT_QUOTA_EXCEEDED, SqlError

log = get_logger("assay.sql")

CAPTURE_HINT = "The query already ran; do not re-run it. No snapshot was saved, so its numbers cannot be cited."


def _capture_fn() -> Any:
    from assay.kernel import evidence

    fn = getattr(evidence, "capture_sql_execution", None)
    if fn is None:
        raise RuntimeError("this build of the evidence store has no capture_sql_execution")
    return fn


def capture(
    sink: Any,
    *,
    resource: Any,
    sql: str,
    columns: list[str],
    rows: Any,
    elapsed_ms: float | Callable[[], float],
    column_types: list[str] | None = None,
    status: str = "succeeded",
    error: str | None = None,
    decimal_text: tuple[int, ...] = (),
    value_kinds: tuple[str, ...] | None = None,
    submitted_sql: str | None = None,
) -> Any:
    """Capture one SQL execution; ``None`` when the run has no sink. Raises ARTIFACT_CAPTURE_FAILED.

    ``sql`` is the SQL that ran (written from the checked statement); ``submitted_sql`` the text as the
    caller sent it, kept beside it in the provenance when the two differ.

    ``decimal_text``: columns the engine returned as numeric text (stored as their Decimal would be).
    ``value_kinds``: what the engine's loaders promise each column holds (a cheaper encoding).
    ``elapsed_ms`` may be a function (rows captured while they stream; read after the last row).
    """
    if sink is None:
        return None
    # The statement is drained to its end anyway: a capture cut at its size limit counts the rest.
    extra: dict[str, Any] = {"count_rest": True}
    if decimal_text:
        extra["decimal_text_columns"] = decimal_text
    if value_kinds is not None:
        extra["value_kinds"] = value_kinds
    if submitted_sql is not None and submitted_sql != sql:
        extra["submitted_sql"] = submitted_sql
    try:
        sources = getattr(
            resource, "source_artifacts", None
        )  # a files datasource: its files' source artifacts
        if sources is not None:
            extra["sources"] = sources(sink)
        return _capture_fn()(
            sink,
            columns=columns,
            rows=rows,
            sql=sql,
            database=resource.name,
            dialect=resource.dialect,
            elapsed_ms=elapsed_ms,
            status=status,
            error=error,
            column_types=column_types,
            **extra,
        )
    except Exception as exc:  # noqa: BLE001 - any failure here is a capture failure
        if (
            isinstance(exc, AssayError) and exc.code == ARTIFACT_QUOTA_EXCEEDED
        ):  # the run's (or owner's) quota: its own code
            raise SqlError(ARTIFACT_QUOTA_EXCEEDED, exc.message, exc.hint) from None
        if getattr(exc, "code", None) == ARTIFACT_CAPTURE_FAILED:
            message = getattr(exc, "message", str(exc))
        else:
            message = f"{type(exc).__name__}: {exc}"
        raise SqlError(ARTIFACT_CAPTURE_FAILED, mask_url(message), CAPTURE_HINT) from None


def stream_capture(sink: Any, *, resource: Any, sql: str) -> Callable[[Any], Any]:
    """The consumer ``sql_query`` gives its attempt: it captures the rows while the statement streams them.

    Called on the worker thread with the running statement's
    :class:`~assay.plugins.sql.results.RowStream`; returns the record. A files datasource's source
    artifacts (the files hashed once) are captured here, before the statement's time limit starts.
    """
    sources = getattr(resource, "source_artifacts", None)
    if sources is not None:
        try:
            sources(sink)
        except Exception:  # noqa: BLE001 - reported by the capture itself (or by the file check first)
            pass

    def consume(stream: Any) -> Any:
        return capture(
            sink,
            resource=resource,
            sql=stream.sql or sql,
            columns=stream.columns,
            rows=stream.rows,
            elapsed_ms=stream.elapsed_ms,
            column_types=stream.column_types,
            decimal_text=stream.decimal_text,
            value_kinds=stream.value_kinds,
            submitted_sql=sql,
        )

    return consume


def capture_failure(
    sink: Any,
    *,
    resource: Any,
    sql: str,
    error: SqlError,
    elapsed_ms: float,
    executed: str | None = None,
) -> Any:
    """Record a failed, timed-out or cancelled attempt; never raises (the query's own error wins).

    ``sql`` is the submitted text, ``executed`` the SQL that was sent (None: nothing was)."""
    try:
        return capture(
            sink,
            resource=resource,
            sql=executed or sql,
            columns=[],
            rows=[],
            elapsed_ms=elapsed_ms,
            status="failed",
            error=f"{error.code}: {error.message}",
            submitted_sql=sql,
        )
    except SqlError as exc:
        log.warning("sql_failure_capture_failed", datasource=resource.name, error=exc.message)
        return None
