"""`.venv/bin/python infra/venv_ready.py`: exits 0 when the running environment already has Herald installed
from this checkout in editable mode, every pinned dependency of pyproject.toml (with the `dev` extra) at a
matching version and every package of requirements.lock at its locked version, so `make setup` can skip a
pip run that would change nothing. Stdlib and `packaging` only: it runs before anything of Herald's is
importable, and any doubt (no `packaging`, an unreadable file) answers "not ready"."""

from __future__ import annotations

import json
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def missing(requirements: list[str]) -> list[str]:
    """The requirements (with their extras' own requirements) this environment does not satisfy."""
    from packaging.requirements import Requirement

    absent: list[str] = []
    seen: set[tuple[str, str]] = set()
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            absent.append(str(requirement))
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            absent.append(f"{requirement} (found {installed})")
            continue
        for wanted in requirement.extras:
            if (requirement.name.lower(), wanted) in seen:
                continue
            seen.add((requirement.name.lower(), wanted))
            for text in metadata.requires(requirement.name) or []:
                dependency = Requirement(text)
                if dependency.marker is not None and "extra" in str(dependency.marker):
                    pending.append((dependency, wanted))
    return absent


def installed_editable_from(project: str, checkout: Path) -> bool:
    """Installed into this environment's site-packages (a `herald.egg-info` left in the checkout by a build,
    which sits on sys.path when run from there, is not an install) in editable mode from `checkout`."""
    site_packages = [sysconfig.get_paths()["purelib"]]
    installed = [d for d in metadata.distributions(path=site_packages) if d.metadata["Name"] == project]
    direct_url = installed[0].read_text("direct_url.json") if installed else None
    if not direct_url:
        return False
    origin = json.loads(direct_url)
    return bool(origin.get("dir_info", {}).get("editable")) and origin.get("url") == checkout.resolve().as_uri()


def locked(lock: Path) -> list[str]:
    """The lock's pins (`name==version`), without their hashes and comments."""
    return [line.split()[0] for line in lock.read_text().splitlines() if line and line[0].isalnum() and "==" in line]


def ready(pyproject: Path, checkout: Path) -> bool:
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("dev", [])]
    return (
        installed_editable_from(project["name"], checkout)
        and not missing(wanted)
        and not missing(locked(checkout / "requirements.lock"))
    )


if __name__ == "__main__":
    try:
        sys.exit(0 if ready(REPO / "pyproject.toml", REPO) else 1)
    except Exception:  # any doubt means: install
        sys.exit(1)
