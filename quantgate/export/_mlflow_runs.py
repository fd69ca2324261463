"""A decided run logged to MLflow (`--mlflow [TRACKING_URI]`, the `mlflow` extra).

Per decided run (per task for a suite) one parent MLflow run named after the run id, holding
the decision's artifacts (decision.json, decision.md, summary.json, report/report.html when
written), and one nested run per variant with its spec as parameters, its figures as metrics
(only what was measured: a figure not measured is not logged, never 0) and its verdict as tags.
The experiment is `quantgate-<dataset>` (`MLFLOW_EXPERIMENT_NAME` overrides it).

The tracking URI is the flag's value, else `MLFLOW_TRACKING_URI`, else a file store in
`./mlruns`. MLflow 3 keeps its file store in maintenance mode and refuses it unless
`MLFLOW_ALLOW_FILE_STORE` is set; mlflow-skinny has no SQLAlchemy for an SQLite store, so
quantgate opts in to the file store for a file URI (unless the variable is already set). MLflow
is imported only here, when the flag is given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.errors import QuantgateError, require_extra
from quantgate.export._decided_runs import DecidedRun
from quantgate.rundir._decision import VariantDecision
from quantgate.rundir._files import DECISION_JSON, DECISION_MD, REPORT_DIR, SUMMARY_FILE
from quantgate.rundir._summary import VariantEntry, VariantMetadata

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

DEFAULT_STORE = "mlruns"
"""The file store's directory when neither the flag nor `MLFLOW_TRACKING_URI` names one."""

SERVER_PATIENCE = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "60"}
"""MLflow's HTTP settings unless set: its defaults (7 retries with backoff, 120 s per request) kept a
run's end waiting about 4.5 minutes on a tracking server that was down (measured against a closed
loopback port); with these it gives up after about half a minute, measured the same way."""


class MlflowExportError(QuantgateError):
    """Logging to MLflow failed (the server, the store); the run directory is complete."""


def tracking_uri(given: str | None) -> str:
    """The tracking URI to log to: `given`, else `MLFLOW_TRACKING_URI`, else `./mlruns` as a file URI."""
    if given:
        return given
    return os.environ.get("MLFLOW_TRACKING_URI") or Path(DEFAULT_STORE).resolve().as_uri()


def is_file_store(uri: str) -> bool:
    """Whether `uri` names MLflow's file store (a `file:` URI or a plain path)."""
    scheme = uri.split(":", 1)[0] if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]+:", uri) else ""
    return scheme in ("", "file")


def _client(uri: str) -> MlflowClient:
    from mlflow.tracking import MlflowClient

    settings = {"MLFLOW_ALLOW_FILE_STORE": "true"} if is_file_store(uri) else SERVER_PATIENCE
    for name, value in settings.items():  # the user's own settings win
        os.environ.setdefault(name, value)
    return MlflowClient(tracking_uri=uri)


def metric_key(name: str) -> str:
    """`name` in the characters MLflow allows in a metric, parameter or tag key."""
    return re.sub(r"[^\w./ :-]+", ".", name).strip(".")


def variant_metrics(variant: VariantDecision, entry: VariantEntry | None) -> dict[str, float]:
    """A variant's measured figures: summary.json's, then the decision's (which win where both
    have a figure: the decision's are what its gates judged). None is left out."""
    metrics: dict[str, float | int | None] = {}
    if entry is not None:
        figures = entry.model_dump(mode="json")
        for group in (figures, figures.get("kind_figures") or {}):  # its kind's figures by their names
            metrics |= {
                key: value
                for key, value in group.items()
                if isinstance(value, int | float) and not isinstance(value, bool)
            }
    if variant.measured is not None:
        metrics |= variant.measured.model_dump(exclude={"memory_source"})
    metrics["footprint_mb"] = variant.footprint_mb
    if variant.comparison is not None:
        overall = variant.comparison.overall
        metrics |= {"accuracy_delta": overall.delta, "paired_cases": overall.cases}
        if overall.interval is not None:
            interval = overall.interval
            metrics |= {"accuracy_delta_low": interval.low, "accuracy_delta_high": interval.high}
    if variant.token_fidelity is not None:
        fidelity = variant.token_fidelity
        metrics |= {
            "kld_mean": fidelity.kld_mean,
            "kld_p99": fidelity.kld_p99,
            "top1_agreement": fidelity.top1_agreement,
        }
    metrics |= {metric_key(f"gate.{gate.gate}"): gate.value for gate in variant.gates}
    return {metric_key(k): float(v) for k, v in metrics.items() if v is not None}


def variant_params(spec: VariantMetadata | None, run: DecidedRun) -> dict[str, str]:
    """A variant's parameters: its spec (backend, model, quantization, ...), the dataset, the gates."""
    params: dict[str, Any] = {"dataset": run.decision.record.dataset.name}
    params["dataset_sha256"] = run.decision.record.dataset.sha256
    if spec is not None:
        params |= spec.model_dump(
            mode="json",
            include={"backend", "model", "quantization", "method", "calibration", "kv_cache", "sha256"},
        )
    gates = run.decision.gates.model_dump(mode="json", exclude={"format_version"})
    params |= {f"gate.{key}": value for key, value in gates.items()}
    return {metric_key(k): str(v)[:6000] for k, v in params.items() if v not in (None, "")}


def variant_tags(name: str, variant: VariantDecision, run: DecidedRun) -> dict[str, str]:
    """A variant's tags: its verdict, whether it passes, is the reference, is recommended; each
    gate's status."""
    tags = {
        "quantgate.run_id": run.decision.record.run_id,
        "verdict": variant.verdict,
        "passes": str(variant.passes).lower(),
        "is_reference": str(variant.is_reference).lower(),
        "recommended": str(run.decision.recommended == name).lower(),
    }
    if variant.error:
        tags["error"] = variant.error[:5000]  # MLflow caps a tag value at 8,000 characters
    return tags | {metric_key(f"gate.{gate.gate}"): gate.status for gate in variant.gates}


def experiment_name(run: DecidedRun) -> str:
    """`MLFLOW_EXPERIMENT_NAME`, else `quantgate-<dataset>`."""
    return os.environ.get("MLFLOW_EXPERIMENT_NAME") or f"quantgate-{run.decision.record.dataset.name}"


def _experiment_id(client: MlflowClient, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    return experiment.experiment_id if experiment is not None else client.create_experiment(name)


def run_artifacts(run_dir: Path) -> list[Path]:
    """The files of a run logged as artifacts, those that exist: the decision, the summary, the report."""
    candidates = [DECISION_JSON, DECISION_MD, SUMMARY_FILE, f"{REPORT_DIR}/report.html"]
    return [run_dir / name for name in candidates if (run_dir / name).is_file()]


def _log_run(client: MlflowClient, run: DecidedRun) -> str:
    """Log one decided run: its parent run, then a nested run per variant; return the parent's id."""
    decision = run.decision
    experiment = _experiment_id(client, experiment_name(run))
    parent_tags = {
        "quantgate.run_id": decision.record.run_id,
        "outcome": decision.outcome,
        "recommended": decision.recommended or "none",
        "reference": decision.reference,
    }
    if run.task is not None:
        parent_tags["quantgate.task"] = run.task
    parent: str = client.create_run(experiment, run_name=run.name, tags=parent_tags).info.run_id
    run_params = {"run_dir": str(run.run_dir), "dataset": decision.record.dataset.name}
    client.log_batch(parent, params=_params(run_params))
    for artifact in run_artifacts(run.run_dir):
        client.log_artifact(parent, str(artifact))
    entries = {entry.name: entry for entry in run.summary.variants}
    specs = {spec.name: spec for spec in decision.record.variants.values()}
    for name, variant in decision.variants.items():
        tags = variant_tags(name, variant, run) | {"mlflow.parentRunId": parent}
        child = client.create_run(experiment, run_name=name, tags=tags).info.run_id
        client.log_batch(
            child,
            metrics=_metrics(variant_metrics(variant, entries.get(name))),
            params=_params(variant_params(specs.get(name), run)),
        )
        client.set_terminated(child)
    client.set_terminated(parent)
    return parent


def _params(values: dict[str, str]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(key, value) for key, value in values.items()]


def _metrics(values: dict[str, float]) -> list[Any]:
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(key, value, now, 0) for key, value in values.items()]


def log_to_mlflow(runs: Sequence[DecidedRun], uri: str | None = None) -> list[str]:
    """Log each decided run to MLflow at `uri` (see `tracking_uri`); return the parent runs' ids.

    Raises:
        MissingExtraError: MLflow is not installed (the `mlflow` extra).
        MlflowExportError: MLflow refused or failed (the store, the server).
    """
    resolved = tracking_uri(uri)
    require_extra("mlflow", "--mlflow")
    from mlflow.exceptions import MlflowException

    try:
        client = _client(resolved)
        return [_log_run(client, run) for run in runs]
    except (MlflowException, OSError) as exc:
        raise MlflowExportError(
            f"logging to MLflow at {resolved} failed: {exc}; the run directory is complete, log it again "
            f"with: quantgate decide RUN_DIR --mlflow {resolved}"
        ) from exc
