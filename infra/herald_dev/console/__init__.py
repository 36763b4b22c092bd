"""The Herald console: one page that watches every flow and operates it (`herald console`, `make dev`)."""
