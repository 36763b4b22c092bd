"""One house rule for every room: each Python file of the product and its tooling (`layers/`, `infra/`) is at
most 400 lines and each function at most 50, so a change is read top to bottom rather than scrolled through.
A file or function over it is named here with the reason it may be, or the test fails."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "layers", REPO / "infra")
MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 50
# path (from the repository) -> why it may be longer; (path, function) -> why it may be longer.
LONG_FILES: dict[str, str] = {}
LONG_FUNCTIONS: dict[tuple[str, str], str] = {}


def python_files() -> list[Path]:
    return sorted(path for root in ROOTS for path in root.rglob("*.py") if "node_modules" not in path.parts)


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """Each function (methods and nested ones too) longer than `limit` lines, with its length."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_every_file_is_at_most_400_lines_or_named_with_its_reason() -> None:
    too_long = {
        str(path.relative_to(REPO)): lines
        for path in python_files()
        if (lines := len(path.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert {path: lines for path, lines in too_long.items() if path not in LONG_FILES} == {}


def test_every_function_is_at_most_50_lines_or_named_with_its_reason() -> None:
    too_long = {
        (str(path.relative_to(REPO)), name): lines
        for path in python_files()
        for name, lines in long_functions(path.read_text(), MAX_FUNCTION_LINES)
    }
    assert {key: lines for key, lines in too_long.items() if key not in LONG_FUNCTIONS} == {}


def test_an_exception_names_something_that_is_still_long() -> None:
    """An exception outlives its reason unnoticed otherwise."""
    files = {str(path.relative_to(REPO)): path for path in python_files()}
    for name in LONG_FILES:
        assert len(files[name].read_text().splitlines()) > MAX_FILE_LINES, name
    for name, function in LONG_FUNCTIONS:
        assert function in dict(long_functions(files[name].read_text(), MAX_FUNCTION_LINES)), (name, function)


def test_a_long_function_is_found_however_deep() -> None:
    body = "\n".join(f"        x{n} = {n}" for n in range(50))
    source = f"class A:\n    def long(self) -> None:\n{body}\n"
    assert long_functions(source, MAX_FUNCTION_LINES) == [("long", 51)]
