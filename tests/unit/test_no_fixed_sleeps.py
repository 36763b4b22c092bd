"""No test waits a fixed time for Herald: a test waits for a condition (`tests.support.waiting.eventually`,
a polling loop) or moves a controlled clock. A sleep is allowed only inside a polling loop, or where the
sleep is itself the behaviour under test and its line says so (`# the sleep is the behaviour: ...`).
The load generator and the benchmarks (tests/soak, tests/bench) pace load on purpose and are not scanned."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MARK = "# the sleep is the behaviour"
SCANNED = ("unit", "functional", "integration", "e2e", "browser", "support")


def _is_sleep(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "sleep"


def fixed_sleeps(source: str) -> list[int]:
    """Lines of sleeps outside any polling loop and without the behaviour mark."""
    lines = source.splitlines()
    found: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            looping = in_loop or isinstance(child, ast.While)
            if isinstance(child, ast.Call) and _is_sleep(child) and not in_loop:
                nearby = lines[max(0, child.lineno - 2) : child.end_lineno]
                if not any(MARK in line for line in nearby):
                    found.append(child.lineno)
            visit(child, looping)

    visit(ast.parse(source), in_loop=False)
    return found


def test_the_check_finds_a_fixed_sleep_and_passes_a_polling_loop_or_a_marked_one() -> None:
    assert fixed_sleeps("import time\ndef test_x():\n    time.sleep(2)\n") == [3]
    assert fixed_sleeps("import asyncio\nasync def test_x():\n    await asyncio.sleep(1.0)\n") == [3]
    polling = "import time\ndef wait():\n    while not ready():\n        time.sleep(0.1)\n"
    assert fixed_sleeps(polling) == []
    marked = f"import time\ndef stall():\n    {MARK}: an owner that stalls\n    time.sleep(8)\n"
    assert fixed_sleeps(marked) == []


def test_no_test_sleeps_a_fixed_time() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for folder in SCANNED
        for path in sorted((TESTS / folder).rglob("*.py"))
        for line in fixed_sleeps(path.read_text())
    ]
    assert offenders == [], "wait for a condition or move the clock instead"
