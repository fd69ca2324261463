"""The architecture, readable from the tree and kept so: layers import only downwards, no import
cycle (function-local imports count), and a few modules directly in quantgate/. (That no caller
decides by a backend's name is tested with the capabilities, tests/quantgate/backends/.)"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("quantgate", "graphs", "evaluators")

FEATURES: dict[str, dict[str, str]] = {
    "quantgate.suite": {
        "_suite_file": "inputs",
        "_suite_records": "rundir",
        "_suite_grid": "render",
        "_suite_run": "evaluate",
        "_suite_decision": "decide",
        "_suite_report": "analysis",
    },
    "quantgate.capacity": {
        "_gguf_metadata": "inputs",
        "_shape_record": "rundir",
        "_capacity_rows": "render",
        "_shape_reading": "evaluate",
        "_capacity_run": "loadtest",
        "_capacity_checks": "decide",
        "_machine_table": "decide",
    },
}
"""Feature packages: a feature that spans layers keeps its modules in one folder, each module counted
as part of the package of the layer it belongs to (`quantgate.<layer>`), so the folder holds the
feature and the layering still holds."""


LAYERS: list[tuple[str, ...]] = [
    ("evaluators",),
    ("graphs",),
    ("quantgate._hardware", "quantgate._formatting", "quantgate.inputs"),
    ("quantgate.rundir",),
    ("quantgate.backends",),
    ("quantgate.render",),
    ("quantgate.ladder",),
    ("quantgate.evaluate",),
    ("quantgate.embeddings",),
    ("quantgate.decide", "quantgate.loadtest"),
    ("quantgate.cluster",),
    ("quantgate.analysis", "quantgate.export", "quantgate.production", "quantgate.serve"),
    ("quantgate.explore",),
    ("quantgate.cli",),
    ("quantgate",),
]
"""From the bottom up: a module imports only from lower rows, or from its own unit (subpackage)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports anywhere in its body (function-local imports too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _unit(module: str) -> tuple[int, str]:
    """The layer row of a module and its unit (the row entry it belongs to; a feature package's
    module belongs to its layer's package)."""
    for package, modules in FEATURES.items():
        for name, layer in modules.items():
            if module == f"{package}.{name}" or module.startswith(f"{package}.{name}."):
                return _unit(f"quantgate.{layer}")
    best = max(
        ((row, entry) for row, entries in enumerate(LAYERS) for entry in entries
         if module == entry or module.startswith(entry + ".")),
        key=lambda found: len(found[1]),
    )  # fmt: skip
    return best


def test_layers_import_only_downwards() -> None:
    wrong = []
    for source, targets in _graph().items():
        row, unit = _unit(source)
        for target in targets:
            target_row, target_unit = _unit(target)
            if target_unit != unit and target_row >= row:
                wrong.append(f"{source} -> {target}")
    assert wrong == [], "imports against the layering (see docs/architecture.md)"


def test_no_import_cycle() -> None:
    graph = _graph()
    # a module importing its own package's __init__ (its re-exports) is not a cycle
    edges = {
        source: {t for t in targets if not source.startswith(t + ".")} for source, targets in graph.items()
    }
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    cycles = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state[target] == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif state[target] == 0:
                visit(target, [*stack, target])
        state[module] = 2

    for module in sorted(edges):
        if state[module] == 0:
            visit(module, [module])
    assert cycles == []


def test_graphs_and_evaluators_import_nothing_from_quantgate() -> None:
    upward = [
        f"{source} -> {target}"
        for source, targets in _graph().items()
        if source.split(".")[0] in ("graphs", "evaluators")
        for target in targets
        if target.split(".")[0] == "quantgate"
    ]
    assert upward == []


def test_few_modules_directly_in_quantgate() -> None:
    top = sorted(
        p.name for p in (ROOT / "quantgate").glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    assert len(top) <= 6, top
    assert set(top) <= {"explore.py", "_formatting.py", "_hardware.py"}


def test_every_module_of_a_feature_package_has_its_layer() -> None:
    for package, modules in FEATURES.items():
        folder = ROOT / package.replace(".", "/")
        found = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
        assert found == set(modules), f"{package}: place each module in a layer (FEATURES)"


def test_the_layer_check_can_fail() -> None:
    assert _unit("quantgate.cli._main") == (len(LAYERS) - 2, "quantgate.cli")
    assert _unit("quantgate.rundir._store")[0] < _unit("quantgate.decide._recommendation")[0]
    assert _unit("quantgate") == (len(LAYERS) - 1, "quantgate")
    assert _unit("quantgate.evaluate._evaluation_run")[0] < _unit("quantgate.cluster._executor")[0]
    # a feature package's modules sit in different rows: its input below its decision
    assert _unit("quantgate.suite._suite_file")[0] < _unit("quantgate.suite._suite_decision")[0]
    assert _unit("quantgate.suite._suite_decision") == _unit("quantgate.decide._checks")


def _layout_rows() -> dict[str, str]:
    """docs/architecture.md's layout tables: each row's folder or file (its first cell) and its text."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in re.finditer(r"^\| `([\w/.]+)` \|(.*)\|$", text, re.MULTILINE)}


def test_architecture_describes_every_module() -> None:
    rows = _layout_rows()
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if path.name == "__init__.py" and relative != "quantgate/__init__.py":
                continue
            row = max((key for key in rows if relative.startswith(key)), key=len, default=None)
            if row is None or (row != relative and f"`{path.name}`" not in rows[row]):
                missing.append(relative)
    assert missing == [], "modules docs/architecture.md does not describe in their folder's row"


def _touches_dataset(path: Path) -> bool:
    """Whether a module takes or keeps a `Dataset` (a parameter or a field annotated with it)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        annotation = node.annotation if isinstance(node, (ast.arg, ast.AnnAssign)) else None
        if annotation is not None and re.search(r"\bDataset\b", ast.unparse(annotation)):
            return True
    return False


def test_a_runs_dataset_stays_in_the_evaluation_package() -> None:
    graph, modules = _graph(), _modules()
    reached, todo = set(), ["quantgate.evaluate._evaluation_run"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph[module])
    handed_to = {
        "quantgate.inputs._examples",
        "quantgate.backends._extraction_context",
        "quantgate.rundir._build",
    }
    outside = sorted(
        module
        for module in reached
        if module.startswith("quantgate.")
        and _touches_dataset(modules[module])
        and not module.startswith("quantgate.evaluate.")
        and module not in handed_to
        and module != "quantgate.inputs._dataset"  # where a dataset is defined and read
    )
    assert outside == [], "a run's dataset reaches these modules outside quantgate/evaluate/"


SHARED_NAMES = {
    "executor.py": "where variants are evaluated: on this machine, and on a Ray cluster",
    "extraction.py": "the extraction task: its graph, and its kind",
    "verification.py": "verified answers: the cases a run verifies, and how answers were obtained",
}
"""File names that more than one module has outside cli/, each with one meaning (at most 4)."""


def test_few_file_names_are_shared_and_each_with_one_meaning() -> None:
    folders: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py" and "cli" not in path.relative_to(ROOT).parts:
                folders[path.name.removeprefix("_")].add(path.parent.relative_to(ROOT).as_posix())
    shared = {name for name, where in folders.items() if len(where) > 1}
    assert shared <= set(SHARED_NAMES), sorted(shared - set(SHARED_NAMES))
    assert len(SHARED_NAMES) <= 4
