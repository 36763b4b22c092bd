"""One lock for the whole tree (issue 28, item 13): requirements.lock pins every package of the dev venv with its
hashes, and layers/requirements.txt is the runtime part of the same resolution, so starlette, pydantic-core,
urllib3 and cryptography no longer float under the layer. Each fails here when it and pyproject.toml disagree."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
# What Lambda's python3.11 on x86_64 Linux evaluates markers as (the layer's resolution target).
LAMBDA = {**default_environment(), "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}


def entries(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (version, hashes) of a hashed requirements file."""
    found: dict[str, tuple[str, frozenset[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", path.read_text()):
        match = _ENTRY.match(block)
        if match:
            hashes = frozenset(re.findall(r"--hash=(sha256:[0-9a-f]{64})", block))
            found[canonicalize_name(match.group(1))] = (match.group(2), hashes)
    return found


def project() -> dict[str, list[str]]:
    table = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {"runtime": table["dependencies"], **table["optional-dependencies"]}


LOCK, LAYER = entries(REPO / "requirements.lock"), entries(REPO / "layers" / "requirements.txt")


def test_every_requirement_of_pyproject_is_locked_at_a_version_it_allows() -> None:
    disagree = []
    for group, requirements in project().items():
        for text in requirements:
            requirement = Requirement(text)
            locked = LOCK.get(canonicalize_name(requirement.name))
            if locked is None or not requirement.specifier.contains(locked[0], prereleases=True):
                disagree.append(f"{group}: {text} (locked: {locked[0] if locked else 'absent'})")
    assert disagree == [], "run `make lock`"


def test_every_locked_package_carries_its_hashes() -> None:
    assert len(LOCK) > 50 and all(hashes for _, hashes in LOCK.values())
    assert all(hashes for _, hashes in LAYER.values())


def test_the_layer_is_the_lock_at_the_same_versions_and_artifacts() -> None:
    for name, (version, hashes) in LAYER.items():
        assert name in LOCK, name
        assert LOCK[name][0] == version, (name, version, LOCK[name][0])
        assert hashes <= LOCK[name][1] or hashes & LOCK[name][1], name


def closure(requirements: list[str]) -> set[str]:
    """Every package the runtime requirements need on Lambda, transitively, read from installed metadata."""
    seen: set[str] = set()
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({**LAMBDA, "extra": extra}):  # type: ignore[dict-item]
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        if name in seen and not extras:
            continue
        seen.add(name)
        for dependency in metadata.requires(name) or []:
            needed = Requirement(dependency)
            for wanted in ["", *extras]:
                pending.append((needed, wanted))
    return seen


def test_the_layer_holds_the_whole_runtime_tree_and_nothing_else() -> None:
    """Regression: the layer pinned only its direct dependencies, so their own floated at each build."""
    assert set(LAYER) == closure(project()["runtime"])
    for floated in ("starlette", "pydantic-core", "urllib3", "cryptography"):
        assert floated in LAYER, floated


def test_setup_and_the_layer_install_by_hash() -> None:
    makefile, layer_makefile = (REPO / "Makefile").read_text(), (REPO / "layers" / "Makefile").read_text()
    assert "--require-hashes -r $(LOCK)" in makefile and "--no-deps -e ." in makefile
    assert "--require-hashes --requirement requirements.txt" in layer_makefile
