"""Suite files: parsed, every dataset and gates file loaded, each bad input named by file and task."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.inputs._dataset import bundled_datasets
from quantgate.inputs._gates import Gates
from quantgate.suite._suite_file import SuiteError, load_suite
from tests.fakes import write_tiny_dataset


def _suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_suite_loads_its_datasets_and_gates_in_order(tmp_path):
    write_tiny_dataset(tmp_path / "data" / "tiny")
    (tmp_path / "strict.toml").write_text("max_accuracy_drop = 0.01\n")
    path = _suite(
        tmp_path,
        '[[task]]\nname = "intents"\ndataset = "banking77"\nlimit = 40\nexamples = 0\n'
        '[[task]]\nname = "invoices"\ndataset = "data/tiny"\ngates = "strict.toml"\n',
    )
    suite = load_suite(path, gate_overrides={"min_cases": 5})
    intents, invoices = suite.tasks
    assert (intents.task.name, intents.dataset.task.kind, intents.task.limit) == (
        "intents",
        "classification",
        40,
    )
    assert intents.task.examples == 0
    assert intents.gates == Gates(min_cases=5)  # the defaults, the command line's value on top
    assert invoices.dataset.path == tmp_path / "data" / "tiny"  # relative to the suite file
    assert len(invoices.dataset.cases) == 5
    assert invoices.gates == Gates(max_accuracy_drop=0.01, min_cases=5)
    assert invoices.gates_file == tmp_path / "strict.toml"


def test_a_task_without_gates_takes_the_command_lines_gates_file(tmp_path):
    (tmp_path / "loose.toml").write_text("min_format_validity = 0.5\n")
    path = _suite(tmp_path, '[[task]]\nname = "a"\ndataset = "banking77"\n')
    (task,) = load_suite(path, gates_file=str(tmp_path / "loose.toml")).tasks
    assert task.gates.min_format_validity == 0.5


BAD_SUITES = [
    (
        '[[task]]\nname = "intents"\ndataset = "bankin77"\n',
        "suite.toml: task 'intents': dataset 'bankin77' not found (no directory {dir}/bankin77; "
        f"bundled: {', '.join(bundled_datasets())})",
    ),
    (
        '[[task]]\nname = "a"\ndataset = "banking77"\n[[task]]\nname = "a"\ndataset = "restaurants"\n',
        "suite.toml: task 'a': the name is given twice (each task needs its own)",
    ),
    (
        '[[task]]\nname = "a"\ndataset = "banking77"\ngates = "nope.toml"\n',
        "suite.toml: task 'a': gates: {dir}/nope.toml: no such gates file",
    ),
    (
        '[[task]]\nname = "a"\ndataset = "banking77"\nlimt = 4\n',
        "suite.toml: task 'a': limt: Extra inputs are not permitted",
    ),
    (
        '[[task]]\nname = "a"\ndataset = "banking77"\nlimit = 4\nbudget = 2\n',
        "suite.toml: task 'a': Value error, max_cases and budget bound a sequential run",
    ),
    (
        '[[task]]\nname = "../up"\ndataset = "banking77"\n',
        "suite.toml: task '../up': name: String should match",
    ),
    ('[[task]]\ndataset = "banking77"\n', "suite.toml: task 1: name: Field required"),
    ("task = []\n", "suite.toml: task: List should have at least 1 item"),
    ('[[task]\nname = "a"\n', "suite.toml: not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_SUITES)
def test_a_bad_suite_is_named_by_file_and_task(tmp_path, text, message):
    path = _suite(tmp_path, text)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{tmp_path}/" + message.format(dir=tmp_path))


def test_a_bad_gates_value_names_the_task_and_the_file(tmp_path):
    (tmp_path / "g.toml").write_text("max_accuracy_drop = 2.0\n")
    path = _suite(tmp_path, '[[task]]\nname = "a"\ndataset = "banking77"\ngates = "g.toml"\n')
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}: task 'a': gates: {tmp_path}/g.toml: max_accuracy_drop: ")


def test_a_dataset_with_errors_is_named_with_its_task(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cases.jsonl").write_text("{}\n")
    path = _suite(tmp_path, '[[task]]\nname = "a"\ndataset = "broken"\n')
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}: task 'a': dataset {tmp_path}/broken has ")


def test_the_example_suite_loads_four_task_kinds():
    suite = load_suite(Path(__file__).parents[3] / "examples" / "suite.toml")
    assert [(t.task.name, t.dataset.task.kind) for t in suite.tasks] == [
        ("intents", "classification"),
        ("tool-calls", "tool_calling"),
        ("restaurant-texts", "generation"),
        ("restaurants", "extraction"),
    ]
    assert [t.task.limit for t in suite.tasks] == [40, 40, 40, None]
    assert (suite.tasks[3].task.max_cases, suite.tasks[3].task.budget) == (200, 5.0)
