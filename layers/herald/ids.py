"""Server-generated identifiers: a short type prefix and 128 random bits, URL-safe."""

import secrets

# A tenant (`app_code`), as tokens, keys and request bodies name it: the one pattern, anchored where used.
APP_CODE_PATTERN = r"^[a-z0-9_-]{1,32}$"
# The tenant a key is made for, and an operator's command acts for, when none is named (settings may change it).
DEFAULT_APP_CODE = "lalu"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"
