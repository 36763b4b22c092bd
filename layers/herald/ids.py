"""Server-generated identifiers: a short type prefix and 128 random bits, URL-safe."""

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"
