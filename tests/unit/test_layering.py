"""Dependencies point inward. The domain of each context (its models and services) imports no AWS SDK, no
web framework and no provider adapter, none of its own context's adapters and no container or wiring;
nothing but the composition root (herald.api) imports herald.api; the contexts' domains depend on one
another in one direction only, and no module imports one that imports it back (however lazily). Read from
the source, so a new import that breaks a rule fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERALD = REPO / "layers" / "herald"
# The packages whose modules must import without cycles: the product and its tooling.
SOURCE_ROOTS = {"herald": REPO / "layers", "herald_dev": REPO / "infra", "herald_ops": REPO / "infra"}
CONTEXTS = ("auth", "confirms", "events", "gauges", "inbox", "invitations", "limits", "owners", "realtime", "turns")
DOMAIN_FILES = (
    "models.py",
    "rules.py",
    "ports.py",
    "jobs.py",
    "cards.py",
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
    "nudges.py",
)
# A context's own modules that are not its domain: its adapters, its routes and handlers, its wiring.
ADAPTERS = ("dynamo", "rows", "sqs", "routes", "handlers", "wiring")
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
    """Every module a file imports, at its top or inside a function: `from a import b` names `a` and `a.b`."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path, root: Path = HERALD.parent) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def source_modules() -> dict[str, Path]:
    return {
        module_name(path, root): path
        for package, root in SOURCE_ROOTS.items()
        for path in (root / package).rglob("*.py")
    }


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of `modules` it imports (a package's `__init__` only when imported itself)."""
    return {
        name: {imported for imported in imports_of(path) if imported in modules and imported != name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
    return found


DOMAIN = [
    HERALD / context / name for context in CONTEXTS for name in DOMAIN_FILES if (HERALD / context / name).exists()
]


@pytest.mark.parametrize("path", DOMAIN, ids=module_name)
def test_the_domain_imports_no_sdk_framework_or_adapter(path: Path) -> None:
    outside = sorted(name for name in imports_of(path) if name.startswith(OUTSIDE_THE_DOMAIN))
    assert outside == []


@pytest.mark.parametrize("path", DOMAIN, ids=module_name)
def test_the_domain_imports_neither_its_own_adapters_nor_the_container(path: Path) -> None:
    own = f"herald.{path.parent.name}."
    composed = sorted(
        name
        for name in imports_of(path)
        if name == "herald.container"
        or name.endswith(".wiring")
        or (name.startswith(own) and name.removeprefix(own).split(".")[0] in ADAPTERS)
    )
    assert composed == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph(source_modules())) == []


def test_the_contexts_domains_depend_on_one_another_in_one_direction() -> None:
    modules = {module_name(path): path for path in DOMAIN}
    context_of = {name: name.split(".")[1] for name in modules}
    graph: dict[str, set[str]] = {context: set() for context in CONTEXTS}
    for name, imported in import_graph(modules).items():
        graph[context_of[name]].update(context_of[other] for other in imported if context_of[other] != context_of[name])
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    """The rule above is only as good as its finder: two modules that import each other (one inside a
    function, as the wirings once did) are one cycle; a chain is none."""
    (tmp_path / "a.py").write_text("from b import part\n")
    (tmp_path / "b.py").write_text("def part():\n    from a import x\n")
    (tmp_path / "c.py").write_text("import a\n")
    modules = {path.stem: path for path in tmp_path.glob("*.py")}
    assert cycles(import_graph(modules)) == [["a", "b"]]
    (tmp_path / "b.py").write_text("def part():\n    return 1\n")
    assert cycles(import_graph(modules)) == []


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
