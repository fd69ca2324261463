"""Scoring the gold against itself, and removing a field, on every real dataset we have."""

import pytest

from evaluators import CaseScorer, aggregate
from evaluators.tool_arguments import first_acceptable
from quantgate.evaluate._predictions import PredictionLine, score_predictions
from quantgate.inputs._dataset import Case, bundled_datasets, bundled_root
from quantgate.inputs._problems import Problem
from quantgate.inputs._task_file import read_record_schema
from tests.conftest import SHARED_SETS, shared_set


def _dataset_dirs(*, extraction_only=False):
    bundled = [
        n for n in bundled_datasets() if not extraction_only or (bundled_root() / n / "schema.json").is_file()
    ]
    return [pytest.param(bundled_root() / n, id=n) for n in bundled] + [
        pytest.param(n, id=f"shared:{n}") for n in SHARED_SETS
    ]


def _read(path_or_name):
    """Task, record schema and labeled cases, read directly: a shared set with invalid gold still counts."""
    root = shared_set(path_or_name) if isinstance(path_or_name, str) else path_or_name
    problems: list[Problem] = []
    record = read_record_schema(root, problems)
    assert record is not None, problems
    lines = (root / "cases.jsonl").read_text().splitlines()
    cases = [Case.model_validate_json(line) for line in lines if line.strip()]
    return record, [c for c in cases if c.expected is not None]


def _call_answer(call, parameters):
    """A gold call as a model would write it: BFCL's form with each argument's first acceptable value,
    `""` leaving it out, but the first other value for an argument the tool requires, and none for one
    it does not declare (a few of BFCL's answers say a required argument may be left out, or list an
    undeclared one that may be)."""
    if not (isinstance(call, dict) and "acceptable" in call):
        return call
    schema = parameters.get(call["name"], {})
    needed, declared = schema.get("required", ()), schema.get("properties", {})
    acceptable = {
        name: sorted(values, key=lambda v: v == "") if name in needed else values
        for name, values in call["acceptable"].items()
        if name in declared or "" not in values
    }
    return {"name": call["name"], "arguments": first_acceptable(acceptable)}


def _answer(expected, task):
    """A gold record as an answer (tool calling's gold in BFCL's form made a call; others as they are)."""
    parameters = {t.function.name: t.function.parameters for t in getattr(task, "tools", ())}
    if isinstance(expected.get("calls"), list):
        return {"calls": [_call_answer(c, parameters) for c in expected["calls"]]}
    if "call" in expected:
        return {"call": _call_answer(expected["call"], parameters)}
    return expected


@pytest.mark.parametrize("root", _dataset_dirs())
def test_gold_scores_perfectly(root):
    record, cases = _read(root)
    case_tasks = {c.id: record.task.for_case(c.tools) for c in cases if c.tools}  # per-case tools
    scorer = CaseScorer(schema=record.schema, task=record.task, case_tasks=case_tasks)
    summary = aggregate(
        scorer(
            case_id=c.id,
            outputs=_answer(c.expected, case_tasks.get(c.id, record.task)),
            reference_outputs=c.expected,
            tags=c.tags,
        )
        for c in cases
    )
    assert summary.field_accuracy == 1.0
    assert summary.field_accuracy_macro == 1.0
    assert all(v == 1.0 for v in summary.slices.values())


@pytest.mark.parametrize("root", _dataset_dirs(extraction_only=True))
def test_removing_a_scalar_field_drops_it_to_the_null_share(root):
    from quantgate.inputs._dataset import Dataset

    record, cases = _read(root)
    schema, spec = record.schema, record.spec
    dataset = Dataset(
        name="t",
        path=root if not isinstance(root, str) else shared_set(root),
        schema=schema,
        spec=spec,
        cases=tuple(cases),
        examples=(),
        card=None,
        sha256="",
    )
    scalars = [c.name for c in spec.children if c.kind not in ("object", "object_array", "scalar_array")]
    assert scalars
    for name in scalars:
        predictions = {
            c.id: PredictionLine(id=c.id, output={k: v for k, v in c.expected.items() if k != name})
            for c in cases
        }
        fields = score_predictions(dataset, predictions).summary.fields
        null_share = sum(c.expected.get(name) is None for c in cases) / len(cases)
        assert fields[name] == pytest.approx(null_share), name
        assert all(v == 1.0 for k, v in fields.items() if k != name), name
