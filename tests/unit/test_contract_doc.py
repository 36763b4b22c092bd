"""The repository owns its contract: docs/contract.md names every route the app serves, and nothing in the
repository sends a reader to a file outside it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from herald_dev.openapi import document

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
TOP_FILES = ("README.md", "template.yaml", "Makefile", "pyproject.toml")
SOURCES = (*TOP_FILES, "docs", "layers", "functions", "infra", "events", "clients", "tests")
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".json", ".ts", ".js", ".html", ""}
SKIPPED_DIRS = {"node_modules", "__pycache__", ".venv", "dist", "build"}


def routes_missing_from(contract: str, spec: dict[str, Any]) -> list[str]:
    """Each route as `METHOD /path`, written in code in the contract (then a backtick, a space or a query)."""
    routes = [f"{method.upper()} {path}" for path, methods in spec["paths"].items() for method in methods]
    return [route for route in routes if not re.search(re.escape(f"`{route}") + r"[`? ]", contract)]


def test_every_route_of_the_openapi_is_in_the_contract() -> None:
    spec = json.loads(document())
    assert len(spec["paths"]) > 20
    assert routes_missing_from(CONTRACT.read_text(), spec) == []


def test_a_route_left_out_of_the_contract_is_found() -> None:
    spec: dict[str, Any] = {"paths": {"/api/v1/inbox/unread-count": {"get": {}}, "/api/v1/new-thing": {"post": {}}}}
    contract = "- `GET /api/v1/inbox/unread-count` → `{...}`\n- `POST /api/v1/new-things` (a different route)\n"
    assert routes_missing_from(contract, spec) == ["POST /api/v1/new-thing"]


def files_of_the_repository() -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        top = ROOT / name
        candidates = [top] if top.is_file() else top.rglob("*")
        found += [
            path
            for path in candidates
            if path.is_file() and path.suffix in SUFFIXES and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts)
        ]
    return found


def test_nothing_in_the_repository_points_to_a_contract_outside_it() -> None:
    # Written in parts, so that this file does not name them itself.
    outside = re.compile("|".join([r"\.\./" + "shared", "CONTRA" + r"CTS(\.md| §)", "ADR" + " 0191"]))
    files = files_of_the_repository()
    assert len(files) > 100
    offenders = [str(path.relative_to(ROOT)) for path in files if outside.search(path.read_text(errors="ignore"))]
    assert offenders == []
