"""docs/security.md names, for each refusal, the test that holds it: each named test must exist, and each
surface the threat model promises must have its section."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "security.md").read_text()
SURFACES = ("The HTTP API", "The WebSocket API", "Owner callbacks", "The console", "The operator CLI")


def test_every_external_surface_has_its_section() -> None:
    headings = re.findall(r"^## (.+)$", DOC, flags=re.MULTILINE)
    assert [s for s in SURFACES if not any(h.startswith(s) for h in headings)] == []


def test_every_test_the_threat_model_names_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", DOC)
    short = re.findall(r"`(test_\w+\.py)::(\w+)`", DOC) + re.findall(r"`::(\w+)`", DOC)
    assert len(named) >= 15
    missing = []
    # Each file by its path (tests/unit/test_tenants.py and tests/functional/test_tenants.py are two); a short
    # reference by file name alone may be to any file of that name.
    functions = {
        path.relative_to(REPO).as_posix(): {
            n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)
        }
        for path in (REPO / "tests").rglob("test_*.py")
    }
    by_name: dict[str, set[str]] = {}
    for path, names in functions.items():
        by_name.setdefault(Path(path).name, set()).update(names)
    everything = set().union(*functions.values())
    for path, test in named:
        if not (REPO / path).exists():
            missing.append(path)
        elif test and test not in functions[path]:
            missing.append(f"{path}::{test}")
    for entry in short:
        file, test = entry if isinstance(entry, tuple) else ("", entry)
        if (file and test not in by_name.get(file, set())) or (not file and test not in everything):
            missing.append(f"{file}::{test}")
    assert missing == []
