"""Server-generated identifiers: a short type prefix and 128 random bits, URL-safe."""

import secrets

# A tenant (`app_code`), as tokens, keys and request bodies name it: the one pattern, anchored where used.
APP_CODE_PATTERN = r"^[a-z0-9_-]{1,32}$"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"
