"""The events context's adapter and dispatcher stay readable: each file under 400 lines, no function longer
than 40 (a screen), so the next change is read top to bottom rather than scrolled through."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EVENTS = Path(__file__).resolve().parents[2] / "layers" / "herald" / "events"
READ_TOP_TO_BOTTOM = [EVENTS / "dynamo.py", EVENTS / "dispatch.py"]


def long_functions(source: str, limit: int) -> list[str]:
    return [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


@pytest.mark.parametrize("path", READ_TOP_TO_BOTTOM, ids=lambda path: path.name)
def test_the_file_is_under_400_lines_and_no_function_is_over_40(path: Path) -> None:
    source = path.read_text()
    assert len(source.splitlines()) < 400
    assert long_functions(source, 40) == []


def test_a_long_function_is_found() -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(41))
    assert long_functions(f"def long() -> None:\n{body}\n", 40) == ["long: 42 lines"]
