"""Resuming an interrupted run: what its directory already holds, read back and checked.

`quantgate run --resume RUN_DIR` goes on with a run that stopped before its end (Ctrl-C,
SIGTERM, `kill -9`, a crash, a power cut). The directory holds all it needs: the copy of the
dataset (`dataset/`: the cases in run order, the few-shot examples the run prompted with), the
variants (`variants.json`, which lists every variant's spec from the start), the options and
gates (`summary.json`), and every case finished so far (`records.jsonl`).

Reading it back:

- a variant whose summary entry is complete is not run again;
- any other variant goes on from its records: each one is rescored by the very code that
  scored it (`quantgate.evaluate._rescore`), and must score as it was recorded (or the scoring
  changed since, and the run cannot be continued like for like); its cases are not run again,
  and the evaluator nodes summarize them with the new ones;
- a torn last line of records.jsonl (a write cut off) is set aside in `records.jsonl.torn`,
  and its case runs again; any other damaged line stops the resume, naming the line;
- the same dataset (its sha256) and the same variants are required when given again, and the
  run's copy of its dataset must be as the run wrote it (`quantgate.evaluate._resume_inputs`).

So each (variant, case) is recorded exactly once, and the records written before are left
as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quantgate._hardware import hardware
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate._recorded_options import resumed_options
from quantgate.evaluate._resume_inputs import ResumeError, run_dataset, run_variants, variants_file
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import FIDELITY_FILE, RECORDS_FILE
from quantgate.rundir._jsonfile import RunFileError
from quantgate.rundir._jsonl import LineProblem
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import (
    RunBusyError,
    RunStore,
    latest_records,
    read_records,
    read_summary,
    set_aside_torn_tail,
)
from quantgate.rundir._summary import RunSummary, VariantEntry, VariantsFile

__all__ = ["ReadBack", "ResumeError", "planned_variants", "read_back"]


@dataclass(kw_only=True)
class ReadBack:
    """An interrupted run, read back from its directory and locked for this process.

    Attributes:
        store: The run's store, holding its lock.
        summary: Its summary with only the entries of the variants that are done, status `running`.
        metadata: variants.json: every variant of the run, the evaluated ones with their runtime.
        dataset: The run's copy of its dataset: the cases in run order, the run's examples.
        variants: The variants to evaluate with (those given again, else the run's own), in run order.
        reference: The reference's name.
        options: The run's options (its budget: see `read_back`).
        done: The variants whose entry is complete: not run again.
        records: Each variant's latest record per case id, as read back.
        kept_fidelity: A complete run going on: each variant's token fidelity as measured (on the
            run's first cases, which do not change), kept instead of measured again.
    """

    store: RunStore
    summary: RunSummary
    metadata: VariantsFile
    dataset: Dataset
    variants: list[Variant]
    reference: str
    options: RunOptions
    done: frozenset[str]
    records: dict[str, dict[str, CaseRecord]]
    kept_fidelity: dict[str, dict[str, Any]]


def _readable_summary(run_dir: Path) -> RunSummary:
    if not run_dir.is_dir():
        raise ResumeError(f"--resume {run_dir}: no such run directory")
    try:
        return read_summary(run_dir)
    except RunFileError as exc:
        raise ResumeError(f"--resume {run_dir}: {exc}; it cannot be resumed: start a new run") from None


def _summary(run_dir: Path) -> RunSummary:
    summary = _readable_summary(run_dir)
    if summary.kind != "evaluation":
        raise ResumeError(f"--resume {run_dir}: a load-test run, not an evaluation: nothing to resume")
    if summary.status == "complete" and not open_candidates(summary):
        ended = [e.name for e in summary.variants if e.sequential and e.sequential.stopped == "cases"]
        why = (
            f"its open candidates ({', '.join(ended)}) used every case of its dataset: a decision needs a "
            "bigger dataset"
            if any(not e.is_reference for e in summary.variants if e.name in ended)
            else f"nothing to resume (quantgate decide {run_dir} judges it again)"
        )
        raise ResumeError(f"--resume {run_dir}: the run is complete; {why}")
    if summary.options is None or summary.options.gates is None:
        raise ResumeError(
            f"--resume {run_dir}: the run was written by an earlier quantgate, which did not record what "
            "resuming needs (its gates and its list of variants): start a new run"
        )
    return summary


def open_candidates(summary: RunSummary) -> list[str]:
    """The candidates a complete sequential run left open because its budget ran out: more cases
    can settle them, on the same sequence (`--resume RUN_DIR --budget MINUTES`)."""
    return [
        e.name
        for e in summary.variants
        if not e.is_reference
        and e.status == "ok"
        and e.sequential is not None
        and e.sequential.settled is None
        and e.sequential.stopped == "budget"
    ]


def _records(run_dir: Path, dataset: Dataset, names: Iterable[str]) -> dict[str, dict[str, CaseRecord]]:
    """The records read back, a torn last line set aside; damage or strangers stop the resume."""
    problems: list[LineProblem] = []
    records = latest_records(read_records(run_dir, problems=problems))
    damaged = [str(p) for p in problems if not p.torn]
    if damaged:
        raise ResumeError(
            f"--resume {run_dir}: {RECORDS_FILE} has damaged lines, so which cases they held is unknown: "
            f"{'; '.join(damaged[:5])}"
        )
    torn = set_aside_torn_tail(run_dir / RECORDS_FILE)
    if torn:
        print(
            f"quantgate: {RECORDS_FILE}: its last line was cut short ({torn} bytes, a write the run did not "
            f"finish); set aside in {RECORDS_FILE}.torn, and its case runs again",
            file=sys.stderr,
        )
    known, cases = set(names), {c.id for c in dataset.cases}
    for variant, own in records.items():
        strangers = sorted(set(own) - cases)
        if variant not in known or strangers:
            what = f"variant {variant}" if variant not in known else f"case {strangers[0]}"
            raise ResumeError(
                f"--resume {run_dir}: {RECORDS_FILE} has records of {what}, which the run has not"
            )
    return records


def _budget(summary: RunSummary, run_dir: Path, given_s: float | None, *, going_on: bool) -> float | None:
    """The budget of case evaluation, all of the run's so far included: what was spent plus
    `given_s`, else the run's own budget (an interrupted run goes on with what it had left)."""
    info = summary.options
    assert info is not None  # _summary checked
    spent = summary.evaluation_s or 0.0
    if given_s is not None:
        return spent + given_s
    if going_on:
        raise ResumeError(
            f"--resume {run_dir}: the run spent its budget with candidates still open; give the minutes "
            "to go on with: --budget MINUTES (its decision forecasts what they need)"
        )
    return info.budget_minutes * 60 if info.budget_minutes is not None else None


def _options(summary: RunSummary, run_dir: Path, *, budget_s: float | None, progress: bool) -> RunOptions:
    """The run's options, with the budget for the rest (`_budget`)."""
    info = summary.options
    assert info is not None  # _summary checked
    assert info.gates is not None
    return resumed_options(
        info,
        out=run_dir.parent,
        progress=progress,
        budget_s=budget_s if info.method == "sequential" else None,
    )


_MACHINE_KEYS = ("cpu_model", "cpu_cores_logical", "cpu_cores_physical", "cpu_affinity", "ram_gb", "machine")
"""What `hardware()` says of the machine itself (the OS and Python may be updated in between)."""


def _warn_other_machine(summary: RunSummary) -> None:
    here = hardware()
    differ = [k for k in _MACHINE_KEYS if here.get(k) != summary.hardware.get(k)]
    if differ and summary.hardware:
        print(
            f"quantgate: warning: resuming on another machine than the run started on ({', '.join(differ)} "
            "differ); the latency and memory of the variants evaluated now are this machine's "
            "(variants.json records each variant's hardware)",
            file=sys.stderr,
        )


def _set_aside_fidelity(run_dir: Path) -> None:
    """An unfinished token-fidelity step's lines: kept aside, the step runs again at the end."""
    path = run_dir / FIDELITY_FILE
    if path.is_file():
        path.replace(path.with_name(FIDELITY_FILE + ".interrupted"))
        print(
            f"quantgate: {FIDELITY_FILE}: the token-fidelity step had not finished; its lines are kept in "
            f"{FIDELITY_FILE}.interrupted and it runs again at the end",
            file=sys.stderr,
        )


def planned_variants(run_dir: str | Path, *, finished: bool = False) -> VariantSet:
    """The variants an interrupted run was started with (variants.json), to check and resume with.

    Args:
        run_dir: The run directory.
        finished: The run may be complete (a suite's finished task, whose variants the suite's
            other tasks go on with); else it must be one that can be resumed.

    Raises:
        ResumeError: The directory cannot be resumed (or, `finished`, read), or a variant is a
            chat model given from Python.
    """
    directory = Path(run_dir)
    summary = _readable_summary(directory) if finished else _summary(directory)
    return VariantSet(
        reference=summary.reference, variants=run_variants(directory, variants_file(directory), None)
    )


def read_back(
    run_dir: str | Path,
    *,
    dataset: Dataset | None = None,
    variant_set: VariantSet | None = None,
    budget_s: float | None = None,
    progress: bool = True,
) -> ReadBack:
    """Read an interrupted run back, check it can go on, and lock it for this process.

    Args:
        run_dir: The run directory.
        dataset: The dataset given again, checked to be the run's (its sha256); the run's own
            copy is what is evaluated.
        variant_set: The variants given again, checked against the run's and then used (a
            model file may have moved); needed for chat models given from Python.
        budget_s: Seconds of case evaluation for the rest of the run; None: what an interrupted
            sequential run had left of its budget (a complete run left open needs it given).
        progress: Show progress bars.

    Raises:
        ResumeError: The directory cannot be resumed; the message says why.
    """
    directory = Path(run_dir)
    summary = _summary(directory)
    copy = run_dataset(directory, summary, dataset)
    metadata = variants_file(directory)
    variants = run_variants(directory, metadata, variant_set)
    going_on = summary.status == "complete"  # a sequential run whose budget left candidates open
    budget = _budget(summary, directory, budget_s, going_on=going_on)
    try:
        store = RunStore.resume(directory)
    except RunBusyError as exc:
        raise ResumeError(f"--resume {exc}") from None
    try:
        records = _records(directory, copy, (v.name for v in variants))
    except BaseException:
        store.close()
        raise
    reopened = {*open_candidates(summary), summary.reference} if going_on else set()
    done = frozenset(e.name for e in summary.variants if e.status == "ok" and e.complete) - reopened
    kept_fidelity = {e.name: {k: getattr(e, k) for k in VariantEntry.FIDELITY_KEYS} for e in summary.variants}
    summary.variants = [e for e in summary.variants if e.name in done]
    summary.status = "running"
    _warn_other_machine(summary)
    if not going_on:
        _set_aside_fidelity(directory)
    return ReadBack(
        store=store,
        summary=summary,
        metadata=metadata,
        dataset=copy,
        variants=variants,
        reference=summary.reference or variants[0].name,
        options=_options(summary, directory, budget_s=budget, progress=progress),
        done=done,
        records=records,
        kept_fidelity=kept_fidelity if going_on else {},
    )
