"""What crosses the broker: one run request, enough for any worker to execute the run.

The run's record, owner and lease are already in the shared catalog when the
message is sent; the message names the run and what to ask. A follow-up
(version 2) names the run it continues: the API checked that the parent is
the owner's, and the worker reads the thread (its runs and verified
artifacts) from the shared catalog. A worker that knows only version 1 fails
such a run with ``WORKER_MESSAGE_INVALID`` rather than answer it without its
thread. Datasources
travel by *name* (each worker resolves it from its own configuration, as the
API does), never as a URL.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RunMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1, 2] = Field(
        default=1,
        description="The message format (2: a follow-up, with parent_run_id); a worker fails a run "
        "whose message it cannot read (WORKER_MESSAGE_INVALID).",
    )
    run_id: str = Field(min_length=1, max_length=200)
    question: str
    datasource: str | None = None
    model: str = Field(description="PROVIDER[:NAME], already checked against what the API offers.")
    max_steps: int = Field(ge=1)
    max_wall_s: float = Field(gt=0)
    enqueued_at: float
    parent_run_id: str | None = Field(
        default=None,
        max_length=200,
        description="A follow-up: the run it continues (the owner's, checked by the API).",
    )
