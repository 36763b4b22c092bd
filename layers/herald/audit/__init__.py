"""The operators' audit log: one append-only record of each act that changes what Herald does."""
