"""A decided run where teams already look: JUnit XML for CI (`--junit FILE`) and MLflow runs
(`--mlflow [TRACKING_URI]`), both written from the run directory's typed files."""

from quantgate.export._decided_runs import DecidedRun, decided_runs
from quantgate.export._junit import junit_document, junit_testsuite, write_junit
from quantgate.export._mlflow_runs import MlflowExportError, log_to_mlflow

__all__ = [
    "DecidedRun",
    "MlflowExportError",
    "decided_runs",
    "junit_document",
    "junit_testsuite",
    "log_to_mlflow",
    "write_junit",
]
