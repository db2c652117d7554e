"""Settings of the files plugin: the ``[files]`` table of the config file and ``ASSAY_FILES_*`` variables.

Files to register come from ``ASSAY_FILES`` (``'sales=./sales.xlsx; ev=./events/*.parquet'``; a bare path
is named after its file) and from ``[files.sources]`` (``sales = "./sales.xlsx"``)::

    [files]
    roots = ["/srv/data"]          # only files under these (symbolic links followed)
    max_upload_bytes = 2147483648

    [files.sources]
    sales = "./sales.xlsx"
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class FilesSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_FILES_", extra="ignore")

    sources: dict[str, str] = Field(
        default_factory=dict, description="Table name -> path, directory or glob."
    )
    datasource: str = Field(
        default="files", description="The datasource name the files are tables of."
    )
    roots: list[str] | None = Field(
        default=None, description="Only files under these directories (links followed)."
    )
    max_upload_bytes: int = Field(
        default=2 << 30, gt=0, description="Largest file POST /files accepts."
    )
    max_columns: int = Field(default=2048, gt=0, description="Widest table registered.")
    max_line_bytes: int = Field(default=2 << 20, gt=0, description="Longest CSV line read.")
    max_excel_expanded_bytes: int = Field(
        default=1 << 30, gt=0, description="Largest uncompressed size a workbook may declare."
    )
