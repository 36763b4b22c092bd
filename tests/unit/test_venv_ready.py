"""`make setup` skips pip only when this environment already is what pip would make of pyproject.toml."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "infra"))
import venv_ready  # a standalone script, not a package

REPO = Path(__file__).resolve().parents[2]


def pyproject(tmp_path: Path, dependencies: list[str], dev: list[str] | None = None) -> Path:
    path = tmp_path / "pyproject.toml"
    listed = ", ".join(f'"{d}"' for d in dependencies)
    extra = ", ".join(f'"{d}"' for d in dev or [])
    path.write_text(
        f'[project]\nname = "herald"\ndependencies = [{listed}]\n[project.optional-dependencies]\ndev = [{extra}]\n'
    )
    return path


def test_the_test_environment_is_ready_for_its_own_checkout() -> None:
    assert venv_ready.ready(REPO / "pyproject.toml", REPO)


def test_an_editable_install_of_another_checkout_is_not_ready(tmp_path: Path) -> None:
    assert not venv_ready.ready(REPO / "pyproject.toml", tmp_path)


@pytest.mark.parametrize(
    "requirement",
    ["herald-no-such-package==1.0", "pytest==0.0.1", "moto[no-such-extra,server]<1"],
)
def test_a_missing_or_differently_pinned_dependency_is_not_ready(tmp_path: Path, requirement: str) -> None:
    assert not venv_ready.ready(pyproject(tmp_path, ["pytest"], [requirement]), REPO)


def test_an_extra_whose_own_dependencies_are_absent_is_missing() -> None:
    assert venv_ready.missing(["moto[server]"]) == []
    assert venv_ready.missing(["moto[s3crc32c]"]) == ['crc32c; extra == "s3crc32c"']  # not installed here
