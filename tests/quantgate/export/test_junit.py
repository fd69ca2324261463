"""The decision as JUnit XML: read back with junitparser, validated against Jenkins' junit-10.xsd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped

from quantgate.export import DecidedRun, decided_runs, write_junit
from quantgate.rundir._decision import GateResult, VariantDecision
from tests.quantgate.export.decided import decided_run

XSD = Path(__file__).parents[2] / "data" / "junit" / "junit-10.xsd"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return decided_run(tmp_path_factory.mktemp("junit") / "run")


def _cases(path: Path) -> dict[tuple[str, str], list[Any]]:
    xml = JUnitXml.fromfile(str(path))
    return {(case.classname, case.name): case.result for suite in xml for case in suite}


def test_one_case_per_variant_and_gate_with_the_decisions_results(run_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "quantgate.xml"
    write_junit(path, decided_runs(run_dir))
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    # R: 4 gates pass; Q: 3 pass (its flips among them) and 3 accuracy gates inconclusive; B: all 6 fail
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (16, 6, 0, 3)
    cases = _cases(path)
    assert cases[("R", "max_error_rate")] == []
    assert cases[("Q", "min_format_validity")] == []
    assert [type(r) for r in cases[("Q", "max_accuracy_drop")]] == [Skipped]
    assert [type(r) for r in cases[("B", "max_slice_accuracy_drop[lang:en]")]] == [Failure]
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["run_id"] == "run"
    assert properties["dataset"] == "synthetic"
    assert properties["reference"] == "R"
    assert properties["outcome"] == "keep_reference"
    assert {k: v for k, v in properties.items() if k.startswith("verdict:")} == {
        "verdict:R": "pass",
        "verdict:Q": "inconclusive",
        "verdict:B": "fail",
    }


def test_a_failure_carries_value_threshold_interval_and_method(run_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "quantgate.xml"
    write_junit(path, decided_runs(run_dir))
    (failure,) = _cases(path)[("B", "min_format_validity")]
    assert isinstance(failure, Failure)
    assert failure.type == "fail"
    # 30 of B's 40 outputs are valid: 0.75 against the 0.9 threshold; the Wilson interval of 30/40
    # at 95% is [0.59806, 0.858129] (hand-computed: centre 0.7281, half-width 0.1300)
    assert failure.message.startswith("min_format_validity fail: value 0.75, threshold 0.9; ")
    assert "95% interval [0.59806, 0.858129] (Wilson score)" in failure.message
    assert failure.message.endswith("0.75 (CI 0.598 to 0.858) is not ≥ 0.9")
    (skipped,) = _cases(path)[("Q", "max_accuracy_drop")]
    assert skipped.message.startswith("max_accuracy_drop inconclusive: value 0, threshold -0.05; ")
    assert "hedged betting confidence interval" in skipped.message


def test_the_file_is_valid_against_the_junit_schema(run_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "quantgate.xml"
    write_junit(path, decided_runs(run_dir))
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(path)  # raises on an invalid document
    broken = path.read_text().replace('<testsuite name="quantgate run"', "<testsuite")
    assert not schema.is_valid(broken)  # the schema does check: a suite needs its name


def test_not_measured_is_skipped_and_a_variant_that_did_not_run_is_an_error(
    run_dir: Path, tmp_path: Path
) -> None:
    (run,) = decided_runs(run_dir)
    unmeasured = GateResult(
        gate="max_memory_mb",
        status="not_measured",
        value=None,
        threshold=400.0,
        evidence="memory not measured",
    )
    q = run.decision.variants["Q"]
    variants = {
        **run.decision.variants,
        "Q": q.model_copy(update={"gates": [*q.gates, unmeasured]}),
        "X": VariantDecision(status="skipped", error="model file missing", passes=False, verdict="skipped"),
    }
    decision = run.decision.model_copy(update={"variants": variants})
    changed = DecidedRun(
        name=run.name, run_dir=run.run_dir, decision=decision, summary=run.summary, task=run.task
    )
    path = tmp_path / "quantgate.xml"
    write_junit(path, [changed])
    xmlschema.XMLSchema(XSD).validate(path)
    cases = _cases(path)
    (skipped,) = cases[("Q", "max_memory_mb")]
    assert isinstance(skipped, Skipped)
    assert skipped.message == (
        "max_memory_mb not_measured: value not measured, threshold 400; memory not measured"
    )
    (error,) = cases[("X", "evaluation")]
    assert isinstance(error, Error)
    assert error.message == "model file missing"
    (suite,) = list(JUnitXml.fromfile(str(path)))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (18, 6, 1, 4)
