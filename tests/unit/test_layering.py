"""Dependencies point inward. The domain of each context (its models and services) imports no AWS SDK, no
web framework and no provider adapter; nothing but the composition root (herald.api) imports herald.api;
an adapter may import its context's domain, never the other way round. Read from the source, so a new
import that breaks a rule fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HERALD = Path(__file__).resolve().parents[2] / "layers" / "herald"
CONTEXTS = ("auth", "confirms", "events", "gauges", "inbox", "invitations", "limits", "owners", "realtime", "turns")
DOMAIN_FILES = (
    "models.py",
    "service.py",
    "service_keys.py",
    "delivery.py",
    "dispatch.py",
    "businesses.py",
    "operations.py",
    "role_invitation.py",
    "signing.py",
    "addresses.py",
    "callbacks.py",
)
OUTSIDE_THE_DOMAIN = (
    "boto3",
    "botocore",
    "pynamodb",
    "fastapi",
    "starlette",
    "mangum",
    "aws_lambda_powertools",
    "herald.providers",
    "herald.tables",
    "herald.aws",
    "herald.web",
    "herald.api",
)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def module_name(path: Path) -> str:
    return ".".join(("herald", *path.relative_to(HERALD).with_suffix("").parts)).removesuffix(".__init__")


DOMAIN = [
    HERALD / context / name for context in CONTEXTS for name in DOMAIN_FILES if (HERALD / context / name).exists()
]


@pytest.mark.parametrize("path", DOMAIN, ids=module_name)
def test_the_domain_imports_no_sdk_framework_or_adapter(path: Path) -> None:
    outside = sorted(name for name in imports_of(path) if name.startswith(OUTSIDE_THE_DOMAIN))
    assert outside == []


def test_only_the_composition_root_imports_herald_api() -> None:
    importers = sorted(
        module_name(path)
        for path in HERALD.rglob("*.py")
        if not module_name(path).startswith("herald.api")
        and any(name == "herald.api" or name.startswith("herald.api.") for name in imports_of(path))
    )
    assert importers == []


def test_every_context_has_domain_files_under_these_rules() -> None:
    """The rules above read these files: a context renamed or reshaped must be named here again."""
    assert {path.parent.name for path in DOMAIN} == set(CONTEXTS)
