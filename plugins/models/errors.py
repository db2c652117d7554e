"""The error codes of the model providers (one place, documented in docs/error-codes.md).

A model error stops the agent's turn; it is an :class:`assay.AssayError` with
one of these codes, a message naming what happened (the server's own words
where it gave any) and a hint saying what to do.
"""

from __future__ import annotations

MODEL_UNREACHABLE = "MODEL_UNREACHABLE"
"""No connection to the model server (refused, DNS, connect timeout), after the retries."""

MODEL_TIMEOUT = "MODEL_TIMEOUT"
"""The server took the request but did not answer within the read timeout."""

MODEL_AUTH_FAILED = "MODEL_AUTH_FAILED"
"""The server refused the key (HTTP 401 or 403)."""

MODEL_NAME_UNKNOWN = "MODEL_NAME_UNKNOWN"
"""The server (or the ``llm`` library) does not know the model name asked for."""

MODEL_RATE_LIMITED = "MODEL_RATE_LIMITED"
"""HTTP 429 still after the retries, or a quota that retrying cannot lift."""

MODEL_REQUEST_FAILED = "MODEL_REQUEST_FAILED"
"""Any other HTTP error (a 4xx the server explained, or 5xx after the retries), or a broken stream."""

MODEL_RESPONSE_INVALID = "MODEL_RESPONSE_INVALID"
"""The server answered, but not with a chat completion (not JSON, no choices, a bad stream event)."""

MODEL_TOOLS_UNSUPPORTED = "MODEL_TOOLS_UNSUPPORTED"
"""The run offers tools, and the chosen model cannot call tools."""

MODEL_REPLAY_DIVERGED = "MODEL_REPLAY_DIVERGED"
"""A replayed conversation asked something the cassette did not record at that turn."""

MODEL_REPLAY_EXHAUSTED = "MODEL_REPLAY_EXHAUSTED"
"""A replayed conversation asked for more turns than the cassette holds."""

MODEL_CASSETTE_INVALID = "MODEL_CASSETTE_INVALID"
"""A cassette file that cannot be read, or one whose lines are not recorded exchanges."""
