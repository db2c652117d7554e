"""Report renderers: documents whose numbers and tables are read from cited artifacts."""
