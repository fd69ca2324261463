"""Running the load test over a variant set into a run directory, and its printed table.

`quantgate load` creates a new run directory; `quantgate run --load` adds the load to the
run it just wrote. Either way the requests go to `load.jsonl` and the figures to the `load`
section of summary.json; the rest of summary.json is left as it was.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from quantgate.backends import capabilities
from quantgate.evaluate._options import select_cases
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantCall, VariantExecutor
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._examples import choose_examples
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.loadtest._levels import LoadJob, LoadOptions, failed_entry, load_variant
from quantgate.rundir._build import dataset_info, new_summary
from quantgate.rundir._files import LOAD_FILE, SUMMARY_FILE
from quantgate.rundir._loadtest_section import LoadLevelSpec, LoadSection, LoadVariantEntry
from quantgate.rundir._store import RunStore, read_summary, write_model


def _load_here(job: LoadJob) -> tuple[LoadVariantEntry, str | None]:
    """`load_variant` on this machine: its requests appended to the run's load.jsonl as they end."""
    return load_variant(job), None


def _load_sent_back(job: LoadJob) -> tuple[LoadVariantEntry, str | None]:
    """`load_variant` on another machine: its requests written to a file there, sent back as text."""
    with tempfile.TemporaryDirectory(prefix="quantgate-load-") as directory:
        records = Path(directory) / LOAD_FILE
        entry = load_variant(replace(job, records_path=records))
        return entry, records.read_text(encoding="utf-8")


def _load_call(job: LoadJob, executor: VariantExecutor) -> VariantCall[tuple[LoadVariantEntry, str | None]]:
    """One variant's load as the executor runs it. Here, a variant whose model lives in this
    process runs in a fresh process when its backend allows, so its memory figures are its own
    (a server's memory is the server's), and appends its requests as they end; elsewhere its
    requests come back with its entry."""
    declared = capabilities(job.variant)
    name = job.variant.name
    return VariantCall(
        variant=job.variant,
        function=_load_sent_back if executor.remote else _load_here,
        argument=job,
        what=f"load of variant {name}",
        isolate=declared.process_isolation and declared.memory == "process",
    )


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


def _section(options: LoadOptions, cases: int) -> LoadSection:
    """The summary's `load` section before any variant: the levels, bounds, seed and targets."""
    return LoadSection(
        levels=[
            LoadLevelSpec(
                name=level.name,
                concurrency=level.concurrency,
                arrivals=level.arrivals,
                rate_per_s=level.rate_per_s,
            )
            for level in options.levels
        ],
        requests_per_level=options.requests,
        duration_s_per_level=options.duration_s,
        max_tokens=options.max_tokens,
        cases=cases,
        arrivals=options.arrivals,
        seed=options.seed if options.arrivals == "poisson" else None,
        ttft_target_s=options.ttft_target_s,
        itl_target_s=options.itl_target_s,
    )


def run_load_test(
    dataset: Dataset,
    variant_set: VariantSet | list[Variant],
    *,
    options: LoadOptions | None = None,
    run_dir: Path | None = None,
    out: Path = Path("runs"),
    executor: VariantExecutor | None = None,
) -> Path:
    """Load-test every variant with the dataset's prompts; write `load.jsonl` and summary's `load`.

    Args:
        dataset: Where the prompts come from (its first `options.cases` cases, both languages).
        variant_set: The variants, tested one after the other.
        options: Levels and bounds.
        run_dir: An existing run directory to add the load to; else a new one under `out`.
        out: Where a new run directory goes.
        executor: Where each variant's load runs: by default here, one after another; a Ray
            executor runs them as tasks with the variants' resources, side by side.

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
    section = _section(options, len(cases))
    executor = executor or LocalExecutor()
    jobs = [
        LoadJob(variant=variant, dataset=dataset, cases=cases, options=options, records_path=records_path)
        for variant in variants
    ]
    for called in executor.call_each([_load_call(job, executor) for job in jobs]):
        variant = called.call.variant
        if called.result is None:
            print(f"quantgate load: skipping variant {variant.name}: {called.error}", file=sys.stderr)
            entry = failed_entry(variant, str(called.error))
        else:
            entry, requests = called.result
            if requests is not None:  # sent back from another machine
                with records_path.open("a", encoding="utf-8") as records:
                    records.write(requests)
        section.variants.append(entry)
        _merge_summary(run_dir, section)
    order = {variant.name: i for i, variant in enumerate(variants)}
    section.variants.sort(key=lambda entry: order[entry.name])
    _merge_summary(run_dir, section)
    return run_dir
