"""The parser: every command's module adds it, `--help` works, and the `schemas` command."""

import argparse
import ast
import json
from pathlib import Path

import pytest

import quantgate.cli
from quantgate.cli import build_parser, main

COMMANDS = [
    "datasets",
    "score",
    "ladder",
    "run",
    "load",
    "capacity",
    "embed",
    "decide",
    "report",
    "compare",
    "serve",
    "doctor",
    "ollama",
    "schemas",
]
LEAVES = [
    ["datasets", "check"],
    ["datasets", "list"],
    ["score"],
    ["ladder"],
    ["run"],
    ["load"],
    ["capacity"],
    ["decide"],
    ["report"],
    ["compare"],
    ["doctor"],
    ["ollama", "modelfiles"],
    ["schemas"],
]
CLI_DIR = Path(quantgate.cli.__file__).parent
HEAVY = (
    "quantgate.analysis",
    "quantgate.backends",
    "quantgate.ladder",
    "quantgate.loadtest",
    "quantgate.evaluate._evaluation_run",
)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_the_subcommands_are_exactly_the_expected_ones_in_order():
    assert list(_subcommands(build_parser())) == COMMANDS


@pytest.mark.parametrize("path", [[], *([c] for c in COMMANDS), *LEAVES], ids=" ".join)
def test_every_command_has_a_working_help(path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*path, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {' '.join(['quantgate', *path])} ")


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_command_has_a_handler(path):
    parser = build_parser()
    for name in path:
        parser = _subcommands(parser)[name]
    assert callable(parser.get_default("handler"))


def test_schemas_help_names_the_run_files(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "schemas write the JSON Schema of each run-directory file "
        "(summary, record, variants, fidelity, load, decision) into DIR"
    ) in help_text


def test_schemas_writes_one_schema_per_run_file(tmp_path, capsys):
    directory = tmp_path / "schemas"
    assert main(["schemas", str(directory)]) == 0
    printed = capsys.readouterr().out.splitlines()
    names = {Path(line).name for line in printed}
    assert names == {
        f"{kind}.schema.json"
        for kind in (
            "summary", "record", "variants", "fidelity", "load", "decision", "embeddings", "suite",
            "suite_decision", "noise_floor",
        )
    }  # fmt: skip
    assert sorted(printed) == sorted(str(p) for p in directory.iterdir())
    for line in printed:
        schema = json.loads(Path(line).read_text(encoding="utf-8"))
        assert schema["$schema"].startswith("https://json-schema.org/")


def test_schemas_prints_what_write_schemas_wrote(tmp_path, monkeypatch, capsys):
    import quantgate.rundir._schemas

    written = [tmp_path / "a.schema.json", tmp_path / "b.schema.json"]
    monkeypatch.setattr(quantgate.rundir._schemas, "write_schemas", lambda directory: written)
    assert main(["schemas", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{written[0]}\n{written[1]}\n"


def test_an_error_in_a_handler_exits_2_with_its_message(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("quantgate: error: ")


def test_ctrl_c_exits_130(monkeypatch, capsys):
    import quantgate.cli._datasets

    def interrupted() -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(quantgate.cli._datasets, "bundled_datasets", interrupted)
    assert main(["datasets", "list"]) == 130
    assert capsys.readouterr().err == "quantgate: interrupted\n"


@pytest.mark.parametrize("module", sorted(CLI_DIR.glob("*.py")), ids=lambda p: p.name)
def test_cli_modules_have_short_functions_and_lazy_heavy_imports(module):
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= 50, f"{module.name}:{node.name} has {length} lines"
    for node in tree.body:  # module level: what building the parser imports
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.module.startswith(HEAVY), f"{module.name} imports {node.module} at start-up"


CLI_HELPERS = ("__init__", "_main", "_common", "_run_shared", "_suite", "_exports")
"""The modules of quantgate/cli that are not a command: the root parser, and what commands share
(`run` and `run --suite`: the options of run's flags and the report; `run` and `decide`: suites,
and `--junit`/`--mlflow`)."""


@pytest.mark.parametrize(
    "module",
    [p for p in sorted(CLI_DIR.glob("*.py")) if p.stem not in CLI_HELPERS],
    ids=lambda p: p.name,
)
def test_each_command_module_exposes_add_parser(module):
    tree = ast.parse(module.read_text(encoding="utf-8"))
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "add_parser" in functions


def test_the_ladder_help_shows_the_default_quants():
    from quantgate.cli._ladder import LADDER_HELP
    from quantgate.ladder._quantize import DEFAULT_QUANTS

    assert ",".join(DEFAULT_QUANTS) == LADDER_HELP
