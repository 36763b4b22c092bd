"""`herald`'s longer command groups, one module each (`herald_dev.cli` puts them together)."""
