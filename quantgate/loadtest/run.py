"""Running the load test over a variant set into a run directory, and its printed table.

`quantgate load` creates a new run directory; `quantgate run --load` adds the load to the
run it just wrote. Either way the requests go to `load.jsonl` and the figures to the `load`
section of summary.json; the rest of summary.json is left as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

from quantgate.backends import BackendError, capabilities
from quantgate.evaluate.options import select_cases
from quantgate.evaluate.worker import run_isolated
from quantgate.inputs.dataset import Dataset
from quantgate.inputs.examples import choose_examples
from quantgate.inputs.variants import Variant, VariantSet
from quantgate.loadtest.levels import LoadJob, LoadOptions, failed_entry, load_variant
from quantgate.rundir.build import dataset_info, new_summary
from quantgate.rundir.files import LOAD_FILE, SUMMARY_FILE
from quantgate.rundir.store import RunStore, read_summary, write_model
from quantgate.rundir.summary import LoadLevelSpec, LoadSection, LoadVariantEntry


def _run_job(job: LoadJob) -> LoadVariantEntry:
    """One variant's load; one whose model lives in this process runs in a fresh process when its
    backend allows, so its memory figures are its own (a server's memory is the server's)."""
    declared = capabilities(job.variant)
    if not declared.process_isolation or declared.memory != "process":
        return load_variant(job)
    name = job.variant.name
    return run_isolated(load_variant, job, name=f"quantgate-load-{name}", what=f"load of variant {name}")


def _new_run(dataset: Dataset, out: Path, cases: int) -> Path:
    store = RunStore.create(out)
    info = dataset_info(dataset, cases, full=False)
    store.write_summary(new_summary(run_id=store.run_id, dataset=info, kind="load"))
    store.close()
    return store.directory


def _merge_summary(run_dir: Path, section: LoadSection) -> None:
    summary = read_summary(run_dir)
    summary.load = section
    write_model(run_dir / SUMMARY_FILE, summary)


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
    dataset = choose_examples(dataset, options.examples).dataset  # the prompts `quantgate run` sends
    cases = tuple(select_cases(dataset.cases, options.cases))
    run_dir = run_dir or _new_run(dataset, out, len(cases))
    records_path = run_dir / LOAD_FILE
    records_path.write_text("", encoding="utf-8")  # a new load replaces an earlier one of the run
    section = LoadSection(
        levels=[LoadLevelSpec(name=level.name, concurrency=level.concurrency) for level in options.levels],
        requests_per_level=options.requests,
        duration_s_per_level=options.duration_s,
        max_tokens=options.max_tokens,
        cases=len(cases),
    )
    for variant in variants:
        job = LoadJob(
            variant=variant, dataset=dataset, cases=cases, options=options, records_path=records_path
        )
        try:
            entry = _run_job(job)
        except BackendError as exc:
            print(f"quantgate load: skipping variant {variant.name}: {exc}", file=sys.stderr)
            entry = failed_entry(variant, exc)
        section.variants.append(entry)
        _merge_summary(run_dir, section)
    _merge_summary(run_dir, section)
    return run_dir
