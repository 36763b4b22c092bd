"""Abuse limits: request counters per app user, per service key and per target."""
