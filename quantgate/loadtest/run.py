"""Running the load test over a variant set into a run directory, and its printed table.

`quantgate load` creates a new run directory; `quantgate run --load` adds the load to the
run it just wrote. Either way the requests go to `load.jsonl` and the figures to the `load`
section of summary.json; the rest of summary.json is left as it was.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from quantgate.backends import BackendError
from quantgate.dataset import Dataset
from quantgate.hardware import hardware, package_version
from quantgate.load import LOAD_FILE, LOAD_FORMAT_VERSION, LoadJob, LoadOptions, failed_entry, load_variant
from quantgate.run import select_cases
from quantgate.runstore import RUN_FORMAT_VERSION, SUMMARY_FILE, RunStore, write_json
from quantgate.variants import Variant, VariantSet
from quantgate.worker import WorkerDiedError, WorkerFailedError, run_in_worker


def _run_job(job: LoadJob) -> dict[str, Any]:
    """One variant's load; an embedded one in a fresh process, so its memory figures are its own."""
    if job.variant.backend != "llamacpp":
        return load_variant(job)
    try:
        return run_in_worker(load_variant, job, name=f"quantgate-load-{job.variant.name}")
    except WorkerDiedError as exc:
        raise BackendError(f"variant {job.variant.name}: {exc}") from None
    except WorkerFailedError as exc:
        raise RuntimeError(
            f"load of variant {job.variant.name} failed in its worker process:\n{exc}"
        ) from None


def _new_run(dataset: Dataset, out: Path, cases: int) -> Path:
    store = RunStore.create(out)
    store.write_summary(
        {
            "format_version": RUN_FORMAT_VERSION,
            "run_id": store.run_id,
            "quantgate_version": package_version("quantgate"),
            "status": "complete",
            "kind": "load",
            "dataset": {
                "name": dataset.name,
                "path": str(dataset.path),
                "sha256": dataset.sha256,
                "cases": cases,
            },
            "hardware": hardware(),
            "variants": [],
        }
    )
    store.close()
    return store.directory


def _merge_summary(run_dir: Path, section: dict[str, Any]) -> None:
    path = run_dir / SUMMARY_FILE
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary["load"] = section
    write_json(path, summary)


def run_load(
    dataset: Dataset,
    variant_set: VariantSet | list[Variant],
    *,
    options: LoadOptions | None = None,
    run_dir: Path | None = None,
    out: Path = Path("runs"),
) -> Path:
    """Load-test every variant with the dataset's prompts; write `load.jsonl` and summary's `load`.

    Args:
        dataset: Where the prompts come from (its first `options.cases` cases, both languages).
        variant_set: The variants, tested one after the other.
        options: Levels and bounds.
        run_dir: An existing run directory to add the load to; else a new one under `out`.
        out: Where a new run directory goes.

    Returns:
        The run directory.
    """
    options = options or LoadOptions()
    variants = variant_set.variants if isinstance(variant_set, VariantSet) else variant_set
    cases = tuple(select_cases(dataset.cases, options.cases))
    run_dir = run_dir or _new_run(dataset, out, len(cases))
    records_path = run_dir / LOAD_FILE
    records_path.write_text("", encoding="utf-8")  # a new load replaces an earlier one of the run
    section: dict[str, Any] = {
        "format_version": LOAD_FORMAT_VERSION,
        "levels": [{"name": level.name, "concurrency": level.concurrency} for level in options.levels],
        "requests_per_level": options.requests,
        "duration_s_per_level": options.duration_s,
        "max_tokens": options.max_tokens,
        "cases": len(cases),
        "variants": [],
    }
    for variant in variants:
        job = LoadJob(
            variant=variant, dataset=dataset, cases=cases, options=options, records_path=records_path
        )
        try:
            entry = _run_job(job)
        except BackendError as exc:
            print(f"quantgate load: skipping variant {variant.name}: {exc}", file=sys.stderr)
            entry = failed_entry(variant, exc)
        section["variants"].append(entry)
        _merge_summary(run_dir, section)
    _merge_summary(run_dir, section)
    return run_dir
