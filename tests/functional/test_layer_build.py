"""The layer `sam build` makes (layers/Makefile) is what Lambda can run at its best: every function loads from it
alone, and every module in it ships as bytecode Python 3.11 loads without looking at the source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from herald_ops.template import StackTemplate

from tests.support.layer_build import built_layer

REPO = Path(__file__).resolve().parents[2]
UNCHECKED_HASH = 0b01  # PEP 552 flags: hash-based, source not checked


# What the layer pins (the whole runtime tree, by hash) is held by tests/unit/test_lock.py.


def test_the_template_builds_the_layer_with_its_makefile() -> None:
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="layer")
    (layer,) = stack.of_type("AWS::Serverless::LayerVersion")
    resource = stack.resources[layer]
    assert resource["Metadata"]["BuildMethod"] == "makefile"
    assert f"build-{layer}:" in (REPO / resource["Properties"]["ContentUri"] / "Makefile").read_text()


@pytest.fixture(scope="module")
def layer() -> Path:
    return built_layer()


def test_every_module_in_the_layer_ships_as_unchecked_bytecode(layer: Path) -> None:
    sources = sorted(layer.rglob("*.py"))
    assert any(path.parts[-2:] == ("herald", "__init__.py") for path in sources)
    missing, checked = [], []
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        if not compiled.exists():
            missing.append(source)
        elif int.from_bytes(compiled.read_bytes()[4:8], "little") != UNCHECKED_HASH:
            checked.append(source)
    assert missing == [] and checked == []


def test_every_function_imports_from_the_layer_and_the_standard_library_alone(layer: Path) -> None:
    """`python -S`: no site-packages, so a dependency missing from layers/requirements.txt fails here."""
    stack = StackTemplate.from_file(REPO / "template.yaml", stack_name="layer")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HERALD_", "PYTHON"))}
    env.update({"AWS_DEFAULT_REGION": "us-east-1", "PYTHONDONTWRITEBYTECODE": "1"})
    for function in stack.of_type("AWS::Serverless::Function"):
        code = REPO / str(stack.function_properties(function)["CodeUri"])
        env["PYTHONPATH"] = os.pathsep.join([str(code), str(layer)])
        probe = "import app, herald; assert herald.__file__.startswith(sys.argv[1]), herald.__file__"
        command = [sys.executable, "-S", "-c", f"import sys; {probe}", str(layer)]
        done = subprocess.run(command, check=False, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (function, done.stderr[-2000:])
