"""A decided run logged to a local MLflow file store and read back with MLflow's own client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from evaluators.errors import UsageError
from quantgate.export import MlflowExportError, decided_runs, log_to_mlflow
from quantgate.export._mlflow_runs import is_file_store, metric_key, tracking_uri
from tests.quantgate.export.decided import decided_run

mlflow_tracking = pytest.importorskip("mlflow.tracking")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = decided_run(tmp_path / "run")
    (run / "report").mkdir()
    (run / "report" / "report.html").write_text("<html><body>report</body></html>\n")
    return run


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)  # what quantgate sets is undone after
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    return (tmp_path / "mlruns").as_uri()


def _variant_runs(client: Any, parent: str) -> dict[str, Any]:
    experiment = client.get_run(parent).info.experiment_id
    runs = client.search_runs([experiment], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    return {run.info.run_name: run for run in runs}


def test_one_run_per_variant_with_the_decisions_figures(run_dir: Path, store: str) -> None:
    (run,) = decided_runs(run_dir)
    (parent,) = log_to_mlflow([run], store)
    client = mlflow_tracking.MlflowClient(tracking_uri=store)
    assert client.get_experiment(client.get_run(parent).info.experiment_id).name == "quantgate-synthetic"
    variants = _variant_runs(client, parent)
    assert set(variants) == {"R", "Q", "B"}
    b, decided_b = variants["B"].data, run.decision.variants["B"]
    assert decided_b.measured is not None
    assert decided_b.comparison is not None
    overall = decided_b.comparison.overall
    assert overall.interval is not None
    assert b.metrics["format_validity"] == decided_b.measured.format_validity == 0.75
    assert b.metrics["error_rate"] == decided_b.measured.error_rate == 0.25
    assert b.metrics["latency_s_p95"] == decided_b.measured.latency_s_p95
    assert b.metrics["accuracy_delta"] == overall.delta == -0.5
    assert (b.metrics["accuracy_delta_low"], b.metrics["accuracy_delta_high"]) == (
        overall.interval.low,
        overall.interval.high,
    )
    assert b.metrics[metric_key("gate.max_slice_accuracy_drop[lang:en]")] == -0.5
    assert b.params["quantization"] == "B"
    assert b.params["backend"] == "test"
    assert b.params["dataset"] == "synthetic"
    assert b.params["gate.min_format_validity"] == "0.9"
    assert b.tags["verdict"] == "fail"
    assert b.tags["gate.min_format_validity"] == "fail"
    assert variants["Q"].data.tags["verdict"] == "inconclusive"


def test_a_figure_not_measured_is_not_logged(run_dir: Path, store: str) -> None:
    (run,) = decided_runs(run_dir)
    (parent,) = log_to_mlflow([run], store)
    variants = _variant_runs(mlflow_tracking.MlflowClient(tracking_uri=store), parent)
    reference = variants["R"].data.metrics
    assert run.decision.variants["R"].comparison is None  # the reference is not compared with itself
    assert "accuracy_delta" not in reference
    (entry,) = [v for v in run.summary.variants if v.name == "R"]
    assert entry.field_accuracy is None
    assert "field_accuracy" not in reference
    assert entry.ttft_s_p95 is None
    assert "ttft_s_p95" not in reference


def test_the_decision_and_report_are_the_parents_artifacts(run_dir: Path, store: str) -> None:
    (parent,) = log_to_mlflow(decided_runs(run_dir), store)
    client = mlflow_tracking.MlflowClient(tracking_uri=store)
    assert {a.path for a in client.list_artifacts(parent)} == {
        "decision.json",
        "decision.md",
        "summary.json",
        "report.html",
    }
    parent_run = client.get_run(parent)
    assert parent_run.data.tags["outcome"] == "keep_reference"
    assert parent_run.data.tags["quantgate.run_id"] == "run"


def test_the_tracking_uri_defaults_to_the_environment_then_mlruns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert tracking_uri(None) == "http://mlflow.example:5000"
    assert tracking_uri("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(tmp_path)
    assert tracking_uri(None) == (tmp_path / "mlruns").resolve().as_uri()
    assert is_file_store(tracking_uri(None))
    assert is_file_store("./mlruns")
    assert not is_file_store("http://mlflow.example:5000")
    assert not is_file_store("sqlite:///x.db")


def test_without_mlflow_the_message_names_the_extra(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # MLflow not installed: importing it raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'quantgate\[mlflow\]'"):
        log_to_mlflow(decided_runs(run_dir), "file:///nowhere")


def test_a_server_that_is_down_is_an_export_error_naming_how_to_log_again(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # fail at once, not after the retries
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)  # what quantgate sets is undone after
    with pytest.raises(MlflowExportError, match=r"quantgate decide RUN_DIR --mlflow http://127\.0\.0\.1:9"):
        log_to_mlflow(decided_runs(run_dir), "http://127.0.0.1:9")  # the discard port: nothing listens
