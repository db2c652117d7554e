"""The host's tokens for calls to the notebook holder: a hash chain per holder.

The holder is started with the chain's last link (the *anchor*) and serves a
call only with a link below the last one it saw (``sandbox_calls.py`` says
why and how it checks). Only the host knows the seed, so only the host can
give out the next link: whatever runs in the sandbox - a cell, which sees
everything its holder knows, raw code, planted code - holds used links at
most.
"""

from __future__ import annotations

import hashlib
import secrets

# Calls one holder can serve; then the host starts a new one (from the snapshot) with a new chain.
CHAIN_LENGTH = 8192
LINK = 32  # bytes (SHA-256)


class CallTokens:
    """One holder's chain: ``anchor`` to start it with, then :meth:`take` per call (last link first)."""

    def __init__(self, length: int = CHAIN_LENGTH) -> None:
        links = bytearray(secrets.token_bytes(LINK))
        for i in range(length):
            links += hashlib.sha256(links[i * LINK : (i + 1) * LINK]).digest()
        self._links = bytes(links)
        self._next = length - 1  # the link given out next: the one just below the anchor

    @property
    def anchor(self) -> str:
        return self._links[-LINK:].hex()

    @property
    def left(self) -> int:
        return self._next + 1

    def take(self) -> str:
        """The next call's token; IndexError when the chain is used up."""
        if self._next < 0:
            raise IndexError("the chain of call tokens is used up")
        link = self._links[self._next * LINK : (self._next + 1) * LINK]
        self._next -= 1
        return link.hex()
