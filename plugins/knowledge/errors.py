"""The knowledge plugin's error codes (catalogued in docs/error-codes.md)."""

from __future__ import annotations

from assay.kernel.errors import AssayError

KNOWLEDGE_BASE_NOT_FOUND = (
    "KNOWLEDGE_BASE_NOT_FOUND"  # no base of that name, or its path is missing
)
KNOWLEDGE_QUERY_EMPTY = "KNOWLEDGE_QUERY_EMPTY"  # the query holds no word to search for
KNOWLEDGE_INDEX_FAILED = "KNOWLEDGE_INDEX_FAILED"  # the index file could not be opened or written
KNOWLEDGE_FILE_UNREADABLE = (
    "KNOWLEDGE_FILE_UNREADABLE"  # one file: permission, I/O or not UTF-8 text
)
KNOWLEDGE_FILE_UNPARSABLE = (
    "KNOWLEDGE_FILE_UNPARSABLE"  # one file: a PDF or CSV that cannot be parsed
)
KNOWLEDGE_PDF_UNSUPPORTED = (
    "KNOWLEDGE_PDF_UNSUPPORTED"  # a PDF, and no PDF text extractor is installed
)
KNOWLEDGE_RETRIEVER_FAILED = (
    "KNOWLEDGE_RETRIEVER_FAILED"  # a second ranker raised; BM25 results stand
)
ARTIFACT_CAPTURE_FAILED = "ARTIFACT_CAPTURE_FAILED"


class KnowledgeError(AssayError):
    """A failure of the knowledge plugin (a base, its index or a search)."""

    code = KNOWLEDGE_INDEX_FAILED
