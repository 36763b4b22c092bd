"""Dependencies point inward. Each folder of the product's package sits on a line of README's drawing and imports
only the lines below it (a context's wiring building its provider clients is the one exception, named below).
The contexts are found, not listed: a folder with a `wiring.py`. Every other file of a context is its domain or
one of its adapters by name; the domain (its models and services) imports no AWS SDK, no web framework and no
provider adapter, none of its own context's adapters and no container or wiring; nothing but the composition
root (herald.api) imports herald.api; the contexts' domains depend on one another in one direction only, and no
module imports one that imports it back (however lazily). Read from the source, so a new import or folder that
breaks a rule fails here."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERALD = REPO / "layers" / "herald"
KERNEL = "(kernel)"  # the modules directly in herald/: settings, errors, tables, ...
# The packages whose modules must import without cycles: the product and its tooling.
SOURCE_ROOTS = {"herald": REPO / "layers", "herald_dev": REPO / "infra", "herald_ops": REPO / "infra"}
# A context's own modules that are not its domain: its adapters, its routes and handlers, its wiring.
ADAPTERS = ("dynamo", "rows", "sqs", "routes", "handlers", "wiring")
# The folders that are not contexts, and why.
EDGES = {
    "api": "the composition root",
    "web": "the HTTP edge every router stands on",
    "providers": "the provider clients the contexts' wirings build",
}
# Imports that go up the drawing, each with why: composition builds the provider clients a context's domain
# speaks to through its ports.
UPWARD = {
    ("confirms/wiring.py", "providers"): "the Tencent IM client of each tenant",
    ("confirms/owners/wiring.py", "providers"): "the guarded transport and resolver of owner callbacks",
    ("events/wiring.py", "providers"): "the Feishu client of each tenant",
    ("events/webhooks/wiring.py", "providers"): "the guarded transport and resolver of status webhooks",
}
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


def imports_of(path: Path) -> frozenset[str]:
    """Every module a file imports, at its top or inside a function: `from a import b` names `a` and `a.b`."""
    return _imports_in(path.read_text())


@functools.cache
def _imports_in(source: str) -> frozenset[str]:
    """The imports of a source, parsed once a run however often the tests below ask."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(found)


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


def contexts() -> list[Path]:
    """Every folder of herald with a wiring.py (confirms/owners too)."""
    return sorted(path.parent for path in HERALD.rglob("wiring.py"))


def domain_files() -> list[Path]:
    return sorted(
        path
        for context in contexts()
        for path in context.glob("*.py")
        if path.stem not in ADAPTERS and path.stem != "__init__"
    )


DOMAIN = domain_files()


def context_name(path: Path) -> str:
    """A module's context, as `module_name` names it: `confirms`, `confirms.owners`."""
    return ".".join(path.parent.relative_to(HERALD).parts)


def test_every_folder_is_a_context_or_a_named_edge_and_every_context_has_a_domain() -> None:
    folders = {path.parent for path in HERALD.rglob("__init__.py")} - {HERALD}
    unclassified = sorted(
        str(folder.relative_to(HERALD)) for folder in folders if folder not in contexts() and folder.name not in EDGES
    )
    assert unclassified == []
    assert {path.parent for path in DOMAIN} == set(contexts())


def drawing() -> list[set[str]]:
    """README's drawing of the layers, top line first: the folders each line names."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- layers: begin -->\n```\n(.*?)```\n<!-- layers: end -->", readme, re.DOTALL)
    assert block, "README has no drawing of the layers"
    return [set(re.split(r"\s{3,}", line.strip())[0].split()) for line in block.group(1).splitlines() if line.strip()]


@functools.cache
def folder_of(module: str) -> str:
    """The top folder of herald a module is in (KERNEL for the modules directly in herald/)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (HERALD / parts[1]).is_dir() else KERNEL


def folder_imports() -> list[tuple[str, str, str]]:
    """(importing file, its folder, the folder it imports) for every import of one folder of herald by another."""
    found = []
    for path in sorted(HERALD.rglob("*.py")):
        source = folder_of(module_name(path))
        for imported in imports_of(path):
            if imported.startswith("herald.") and (target := folder_of(imported)) != source:
                found.append((str(path.relative_to(HERALD)), source, target))
    return found


def test_the_drawing_names_every_folder_once() -> None:
    drawn = [name for line in drawing() for name in line]
    folders = {path.parent.relative_to(HERALD).parts[0] for path in HERALD.glob("*/__init__.py")}
    assert sorted(drawn) == sorted({*folders, KERNEL})


def test_every_import_goes_down_the_drawing_but_the_wirings_of_provider_clients() -> None:
    line_of = {name: index for index, line in enumerate(drawing()) for name in line}
    upward = {(path, target) for path, source, target in folder_imports() if line_of[target] <= line_of[source]}
    assert upward == set(UPWARD)


def test_an_import_up_the_drawing_is_found() -> None:
    line_of = {name: index for index, line in enumerate(drawing()) for name in line}
    assert line_of["auth"] > line_of["events"]  # auth imported events once (its target types): that went up
    assert folder_of("herald.events.models") == "events" and folder_of("herald.targets") == KERNEL


@pytest.mark.parametrize("path", DOMAIN, ids=module_name)
def test_the_domain_imports_no_sdk_framework_or_adapter(path: Path) -> None:
    outside = sorted(name for name in imports_of(path) if within(name, OUTSIDE_THE_DOMAIN))
    assert outside == []


def within(module: str, packages: tuple[str, ...]) -> bool:
    """`module` is one of `packages` or inside one (`herald.webhook_signing` is not inside `herald.web`)."""
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def test_a_module_whose_name_only_begins_like_a_package_is_not_inside_it() -> None:
    assert within("herald.web.envelope", ("herald.web",)) and within("boto3", ("boto3",))
    assert not within("herald.webhook_signing", ("herald.web",))


@pytest.mark.parametrize("path", DOMAIN, ids=module_name)
def test_the_domain_imports_neither_its_own_adapters_nor_the_container(path: Path) -> None:
    own = f"herald.{context_name(path)}."
    composed = sorted(
        name
        for name in imports_of(path)
        if name == "herald.container"
        or name.endswith(".wiring")
        or (name.startswith(own) and set(name.removeprefix(own).split(".")) & set(ADAPTERS))
    )
    assert composed == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph(source_modules())) == []


def test_the_contexts_domains_depend_on_one_another_in_one_direction() -> None:
    modules = {module_name(path): path for path in DOMAIN}
    context_of = {module_name(path): context_name(path) for path in DOMAIN}
    graph: dict[str, set[str]] = {name: set() for name in set(context_of.values())}
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
