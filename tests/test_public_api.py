"""The public surface: `quantgate` loads its names on first use, every listed name resolves, and
production imports neither the report, the server, the vector store nor the cluster."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import quantgate

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("pandas", "matplotlib", "jinja2", "fastapi", "uvicorn", "starlette", "qdrant_client", "ray")
"""What production must not import: the report's, the server's, the vector store's and Ray's."""


def _imported_after(statement: str) -> set[str]:
    """Top-level package names in `sys.modules` after running `statement` in a fresh interpreter."""
    code = (
        f"import json, sys\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "statement",
    [
        "import quantgate.production",
        "from quantgate import open_extractor, load_chosen, OnlineGuard",
        "import quantgate",
    ],
)
def test_production_imports_no_heavy_package(statement: str) -> None:
    imported = _imported_after(statement)
    assert "quantgate" in imported
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_the_heavy_check_can_fail() -> None:
    assert "pandas" in _imported_after("from quantgate import load_run_view")


def test_every_public_name_resolves_to_its_definition() -> None:
    importlib.import_module("quantgate.cli")  # every subpackage: `quantgate.decide` stays the function
    importlib.import_module("quantgate.decide._recommendation")
    for module, names in quantgate._EXPORTS.items():
        defining = importlib.import_module(module)
        for name in names:
            assert getattr(quantgate, name) is getattr(defining, name), name
    assert set(quantgate.__all__) == {"__version__", *quantgate._MODULE_OF}
    assert set(quantgate.__all__) <= set(dir(quantgate))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'quantgate' has no attribute 'no_such_name'"):
        _ = quantgate.no_such_name
    with pytest.raises(ImportError):
        exec("from quantgate import no_such_name", {})


def test_the_type_checking_imports_match_the_lazy_table() -> None:
    """The imports a type checker reads are the ones the lazy table performs."""
    tree = ast.parse((ROOT / "quantgate" / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {
        (node.module, alias.name)
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {(module, name) for name, module in quantgate._MODULE_OF.items()}


def test_the_production_example_imports_only_public_names() -> None:
    tree = ast.parse((ROOT / "examples" / "production.py").read_text(encoding="utf-8"))
    project = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[0] in ("quantgate", "graphs", "evaluators")
    ]
    assert project, "the example imports nothing from quantgate"
    for node in project:
        public = importlib.import_module(node.module or "").__all__
        assert {alias.name for alias in node.names} <= set(public), node.module


def test_the_public_packages_list_their_names_and_docs_api_names_them() -> None:
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for package in ("quantgate", "quantgate.production", "graphs", "evaluators"):
        module = importlib.import_module(package)
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], (package, missing)
        assert f"`{package}`" in api, package
    undocumented = [name for name in quantgate.__all__ if f"`{name}`" not in api]
    assert undocumented == []


def test_a_renamed_name_still_answers_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="run_load_test"):
        old = quantgate.run_load
    assert old is quantgate.run_load_test
    with pytest.raises(AttributeError, match="run_lode"):
        _ = quantgate.run_lode


def test_internal_modules_are_marked() -> None:
    unmarked = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "quantgate").rglob("*.py")
        if path.parent != ROOT / "quantgate" and not path.name.startswith("_")
    ]
    top = sorted(p.name for p in (ROOT / "quantgate").glob("*.py"))
    assert unmarked == [], "modules inside quantgate's subpackages must start with _ (docs/api.md)"
    assert top == ["__init__.py", "__main__.py", "_formatting.py", "_hardware.py", "explore.py"]
