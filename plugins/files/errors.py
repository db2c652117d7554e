"""The files plugin's error codes: each bad input has its own, and nothing is half-registered."""

from __future__ import annotations

from assay.plugins.sql.errors import SqlError

FILE_NOT_FOUND = "FILE_NOT_FOUND"  # no such path, or a glob/directory that matched nothing
FILE_NOT_REGULAR = "FILE_NOT_REGULAR"  # a device, FIFO or socket, not a file
FILE_OUTSIDE_ROOTS = "FILE_OUTSIDE_ROOTS"  # resolves (symlinks followed) outside the allowed roots
FILE_NAME_INVALID = (
    "FILE_NAME_INVALID"  # a table name or upload name that cannot be used ('../', empty)
)
FILE_FORMAT_UNKNOWN = "FILE_FORMAT_UNKNOWN"  # an extension assay does not read
FILE_FORMAT_MISMATCH = (
    "FILE_FORMAT_MISMATCH"  # the bytes are another format than the extension says
)
FILE_NOT_TEXT = "FILE_NOT_TEXT"  # a CSV/JSON that is binary junk
FILE_EMPTY = "FILE_EMPTY"  # zero bytes, or only white space
FILE_NO_ROWS = "FILE_NO_ROWS"  # a header and no rows
FILE_MALFORMED = "FILE_MALFORMED"  # ragged rows, unbalanced quotes, JSON that does not parse
FILE_TOO_WIDE = "FILE_TOO_WIDE"  # more columns than max_columns
FILE_LINE_TOO_LONG = "FILE_LINE_TOO_LONG"  # a line longer than max_line_bytes
FILE_TOO_LARGE = "FILE_TOO_LARGE"  # over the size limit (an upload; an xlsx declaring more than it may expand to)
FILE_ENCRYPTED = "FILE_ENCRYPTED"  # a password-protected workbook
FILE_CORRUPT = "FILE_CORRUPT"  # a workbook or Parquet file its reader cannot open
FILE_CHANGED = "FILE_CHANGED"  # the file's bytes changed after registration
FILE_MISSING = "FILE_MISSING"  # a registered file is gone (deleted or moved, even mid-query)
FILE_READER_MISSING = (
    "FILE_READER_MISSING"  # the optional reader (fastexcel, charset-normalizer) is not installed
)


class FileError(SqlError):
    """A file that cannot be registered or read; a :class:`SqlError`, so tools return it as a result."""
