"""The local cloud's signing secret for app-user tokens: the local cloud configures its functions with it, and
the console and `herald token` sign with it. Its own module, below both, so neither imports the other for it."""

LOCAL_JWT_SECRET = "herald-local-development-secret-do-not-deploy"  # noqa: S105 - local only, by design
