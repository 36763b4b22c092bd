"""herald-ops' command groups, one module each; `herald_ops.cli` puts them together."""
