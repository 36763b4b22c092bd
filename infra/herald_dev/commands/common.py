"""What `herald`'s commands share: the running local cloud's state file, and the dev tokens they mint."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import jwt
from herald_ops.stack import DEFAULT_STATE

from herald_dev.local_identity import LOCAL_JWT_SECRET

F = TypeVar("F", bound=Callable[..., Any])


def env_int(name: str, default: int) -> Callable[[], int]:
    """An option's default from the environment, read when the command runs."""
    return lambda: int(os.environ.get(name, default))


def state_file_option(command: F) -> F:
    """--state-file: where the running local cloud writes its endpoints and resources."""
    return click.option(
        "--state-file",
        default=lambda: os.environ.get("HERALD_LOCAL_STATE", str(DEFAULT_STATE)),
        help="the running local cloud's state",
    )(command)


def local_state(state_file: str) -> dict[str, Any]:
    state_path = Path(state_file)
    if not state_path.exists():
        raise SystemExit(f"no local cloud is running ({state_path} not found): start it with `make dev`")
    return json.loads(state_path.read_text())  # type: ignore[no-any-return]


def dev_token(user: str, app: str, roles: str, ttl_s: int) -> str:
    """A JWT the local cloud accepts (HS256 with the local secret, or HERALD_JWT_HS256_SECRET)."""
    now = int(time.time())
    claims: dict[str, Any] = {"sub": user, "app_code": app, "iat": now, "exp": now + ttl_s}
    if roles:
        claims["roles"] = [role for role in roles.split(",") if role]
    return jwt.encode(claims, os.environ.get("HERALD_JWT_HS256_SECRET", LOCAL_JWT_SECRET), algorithm="HS256")
