"""What several `quantgate` commands share: defaults, datasets and variants, gates, the decision,
where variants are evaluated (`--executor`)."""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from evaluators.errors import UsageError
from quantgate._formatting import terminal_text
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._gates import GATE_KEYS, Gates, load_gates, value_type
from quantgate.inputs._prices import Prices, load_prices

if TYPE_CHECKING:
    from quantgate.evaluate.scheduler._executor import VariantExecutor
    from quantgate.inputs._variants import VariantSet
    from quantgate.rundir._decision import Decision, Ranking
    from quantgate.rundir._summary import SequentialEntry

    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
    """The root parser's subcommands, which each command module's `add_parser` adds to."""

Number = TypeVar("Number", int, float)

DEFAULT_DATASET = "contacts-events"
"""The dataset of `quantgate load` and `quantgate embed` without --dataset."""
DEFAULT_RUN_DATASET = "restaurants"
"""The dataset of `quantgate run` without --dataset: 1,398 real short texts, enough cases for the
sequential gates to pass a variant close to the reference and fail a broken one."""
DEFAULT_LIMIT = 10
"""Cases whose prompts `quantgate load` sends without --dataset or --limit."""
DEFAULT_BUDGET_MINUTES = 10.0
"""Minutes of case evaluation of a plain `quantgate run` (the default dataset, sequential)."""


def _checked(
    text: str, parse: Callable[[str], Number], accept: Callable[[Number], bool], expected: str
) -> Number:
    """`parse(text)` if it parses and `accept`s, else an argparse error (argparse names the flag)."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text.strip()}")
    return value


def examples_count(text: str) -> int:
    """An argparse type for `--examples`: a count of at least 0, or `none` (0: a zero-shot prompt)."""
    if text.strip().lower() == "none":
        return 0
    return _checked(text, int, lambda v: v >= 0, "a number of examples (0 or more) or 'none'")


def add_examples_flag(parser: argparse.ArgumentParser) -> None:
    """`--examples N|none`: labeled cases taken as few-shot examples from a dataset without any."""
    from quantgate.inputs._examples import DEFAULT_EXAMPLES

    parser.add_argument(
        "--examples",
        type=examples_count,
        default=DEFAULT_EXAMPLES,
        metavar="N|none",
        help="when the dataset has no examples.jsonl, take N labeled cases (spread across languages and "
        f"tags) as few-shot examples and leave them out of scoring (default {DEFAULT_EXAMPLES}); "
        "none: a zero-shot prompt, even when the dataset has examples",
    )


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    return _checked(text, float, lambda v: 0 < v < float("inf"), "a positive number")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    return _checked(text, int, lambda v: v >= 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    return _checked(text, int, lambda v: v >= 0, "an integer >= 0")


def bounded_float(low: float, high: float, expected: str, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` (above it, if `above`) to `high`; `expected` says
    what for the error (`a number of seconds above 0, at most 86400`). NaN and infinities fail."""
    return lambda text: _checked(
        text, float, lambda v: (v > low if above else v >= low) and v <= high, expected
    )


def bounded_int(low: int, high: int, expected: str) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high` (`expected` says what, for the error)."""
    return lambda text: _checked(text, int, lambda v: low <= v <= high, expected)


def cli_dataset(name: str, skip_invalid_cases: bool) -> Dataset:
    """Load a dataset by directory or bundled name, printing its warnings to stderr."""
    dataset = load_dataset(name, skip_invalid_cases=skip_invalid_cases)
    for warning in dataset.warnings:
        print(terminal_text(f"warning: {dataset.path}/{warning}"), file=sys.stderr)
    return dataset


def cli_variants(specs: list[str] | None) -> VariantSet:
    """The variants given on the command line, else the default ladder (built if missing).

    Every embedded variant's model file is checked before any model loads (`check_model_files`):
    there, readable, a complete GGUF, of the size and sha256 the variants file gives.
    """
    from quantgate.inputs._shorthands import resolve_variants
    from quantgate.ladder._quantize import build_ladder

    if specs:
        variant_set = resolve_variants(specs)
        check_variant_files(variant_set)
        return variant_set
    print("building the default ladder (Gemma 3 270M: F16 reference, Q8_0, Q4_K_M, Q2_K) if missing")
    variant_set, _ = build_ladder()
    check_variant_files(variant_set, verify_sha256=False)  # the build has just checked each file's sha256
    return variant_set


def check_variant_files(variant_set: VariantSet, *, verify_sha256: bool = True) -> None:
    """Check every variant's options against its backend's model (`options_problems`: a wrong value,
    an unknown key), its `kv_cache` against its backend (`kv_cache_problem`) and every embedded
    variant's model file (`check_model_files`, then `model_file_problems`), before any model loads.

    Raises:
        UsageError: A variant's backend refuses one of its options or cannot take its `kv_cache`, or
            its model file cannot serve its options (no chat template for `chat_template`).
    """
    from quantgate.backends import capabilities, kv_cache_problem, model_file_problems, options_problems
    from quantgate.inputs._gguf_files import check_model_files

    problems = options_problems(variant_set.variants)
    problems += [p for p in map(kv_cache_problem, variant_set.variants) if p]
    if problems:
        raise UsageError("; ".join(problems))
    embedded = [variant for variant in variant_set.variants if capabilities(variant).model_file]
    check_model_files(embedded, verify_sha256=verify_sha256)
    if problems := model_file_problems(embedded):
        raise UsageError("; ".join(problems))


def check_output_dir(out: Path, what: str = "--out") -> None:
    """Check that an output directory (`what`: the flag or argument that names it) can be
    created (if missing) and written, before any work starts.

    Raises:
        UsageError: `out` or the nearest of its parents that exists is a file, or is not writable;
            the message names the path and why.
    """
    for path in (out, *out.absolute().parents):
        try:
            is_dir = stat.S_ISDIR(path.stat().st_mode)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there yet (or under a file, which a parent shows)
        except OSError as exc:
            raise UsageError(f"{what} {out}: cannot look at {path}: {exc.strerror or exc}") from None
        if path == out:
            if not is_dir:
                raise UsageError(f"{what} {out}: it is a file, not a directory")
            if not os.access(path, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {out}: the directory is not writable")
            return
        if not is_dir:
            raise UsageError(f"{what} {out}: cannot create it: {path} is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{what} {out}: cannot create it: {path} is not writable")
        return


def add_gate_flags(parser: argparse.ArgumentParser) -> None:
    """The gate flags of `run`, `decide` and `compare`: `--gates FILE` and one flag per key of `Gates`,
    its help the field's description."""
    group = parser.add_argument_group("gates (flags override the file; fractions: 0.05 = 5 points)")
    group.add_argument("--gates", metavar="FILE.toml", help="gates file: its keys are the flags below")
    for key in GATE_KEYS:
        info = Gates.model_fields[key]
        default = "off" if info.default is None else info.default
        described = " ".join((info.description or "").split()).replace("%", "%%")
        group.add_argument(
            "--" + key.replace("_", "-"),
            type=value_type(key),
            metavar="N",
            help=f"{described} (default: {default})",
        )


def cli_gates(args: argparse.Namespace) -> Gates:
    """The gates of `add_gate_flags`' flags: the gates file (or the defaults), flags overriding it."""
    overrides = {key: getattr(args, key) for key in GATE_KEYS}
    return load_gates(args.gates, overrides=overrides)


def add_cost_flags(parser: argparse.ArgumentParser) -> None:
    """The cost flags of `run` and `decide`: `--costs FILE` and `--recommend`."""
    group = parser.add_argument_group("costs (the expected cost per 1,000 extractions of each variant)")
    group.add_argument(
        "--costs",
        metavar="FILE.toml",
        help="the team's prices (review, retry call, node and memory per hour, energy, traffic; see "
        "quantgate/inputs/_prices.py): the decision gets each variant's expected cost per 1,000 extractions",
    )
    group.add_argument(
        "--recommend",
        choices=("footprint", "cost"),
        default="footprint",
        help="rank the variants that pass every gate by their memory footprint (default) or by their "
        "expected cost (needs --costs)",
    )


def cli_costs(args: argparse.Namespace) -> tuple[Prices | None, Ranking]:
    """The prices of `--costs` (None without it) and what `--recommend` ranks by.

    Raises:
        UsageError: `--recommend cost` without `--costs`, or a costs file that cannot be used.
    """
    if args.recommend == "cost" and args.costs is None:
        raise UsageError("--recommend cost needs --costs FILE.toml: the prices to rank the variants by")
    return (None if args.costs is None else load_prices(args.costs)), args.recommend


def sequential_note(entry: SequentialEntry, *, is_reference: bool = False) -> str:
    """How a variant's sequential evaluation ended, in a few words."""
    if is_reference:
        how = {"settled": "every candidate settled", "budget": "budget spent", "cases": "cases used up"}
        return f"{how[entry.stopped]} after {entry.cases} cases"
    how = {"settled": "settled", "budget": "budget spent", "cases": "cases used up"}
    return f"{how[entry.stopped]} after {entry.paired_cases} paired cases"


def _resume_line(decision: Decision, run_dir: Path) -> str | None:
    """The command that goes on with the candidates left open, with the budget their forecasts ask
    (each one's cases at its own rate, plus the reference's for the most cases any needs); None
    when none is open or the dataset has too few cases left for every open one."""
    open_ones = [s.open for s in decision.variants.values() if s.open is not None]
    feasible = [
        o for o in open_ones if o.forecast.median_more is not None and o.forecast.median_more <= o.cases_left
    ]
    if not feasible:
        return None
    rates = [
        (o.forecast.median_more or 0, o.seconds_per_case, o.reference_seconds_per_case) for o in feasible
    ]
    if any(own is None or reference is None for _, own, reference in rates):
        budget = "MINUTES"
    else:
        seconds = sum(more * (own or 0.0) for more, own, _ in rates) + max(
            more * (reference or 0.0) for more, _, reference in rates
        )
        budget = str(max(1, math.ceil(seconds / 60)))
    command = f"quantgate run --resume {run_dir} --budget {budget}"
    return f"to go on with the open candidates on the same sequence: {command}"


def _decision_line(decision: Decision) -> str:
    if decision.outcome == "none_passes":
        return "no variant passes every gate, not even the reference"
    if decision.outcome == "keep_reference":
        return f"keep the reference {decision.recommended}: no quantized variant is shown safe"
    line = f"{decision.recommended} replaces the reference {decision.reference}"
    costs = decision.costs.variants.get(decision.recommended or "") if decision.costs else None
    if costs is not None and costs.total_per_1000 is not None:
        unit = f" {decision.costs.currency}" if decision.costs and decision.costs.currency else ""
        by = ", the cheapest passing variant" if decision.recommended_by == "cost" else ""
        line += f" ({costs.total_per_1000:,.2f}{unit} per 1,000 extractions{by})"
    return line


def _break_even_line(decision: Decision) -> str:
    """Where the chosen variant's cost meets the reference's, or why that is not given."""
    signals = decision.rollback.signals if decision.rollback else []
    found = next((s for s in signals if s.metric == "wrong_case_rate"), None)
    if found is None:
        return (
            "cost break-even: not given (it needs a recommended variant other than the reference, review "
            "priced, both totals measured, and a wrong case in the run to price one by)"
        )
    chosen, reference, measured = decision.recommended, decision.reference, f"{found.measured:.1%}"
    if found.threshold >= 1.0:
        return (
            f"cost break-even: none; {chosen} stays cheaper than the reference {reference} even if every "
            f"case has a wrong field (measured: {measured})"
        )
    if found.threshold <= 0.0:
        return (
            f"cost break-even: none; {chosen} costs more than the reference {reference} even with no wrong "
            f"case (measured: {measured} of cases with a wrong field)"
        )
    return (
        f"cost break-even: {chosen} costs more than the reference {reference} above "
        f"{found.threshold:.1%} of cases with a wrong field (measured: {measured})"
    )


def _say(line: str) -> None:
    """Print a line that quotes names from the user's files, its control characters escaped."""
    print(terminal_text(line))


def report_decision(
    run_dir: Path,
    gates: Gates,
    *,
    quiet: bool = False,
    prices: Prices | None = None,
    recommend_by: Ranking = "footprint",
) -> int:
    """Decide a run, print each variant's verdict and the decision; return the decision's exit status."""
    from quantgate._formatting import text_table
    from quantgate.decide._recommendation import decide
    from quantgate.render._cost_rows import cost_rows
    from quantgate.rundir._files import DECISION_MD

    decision = decide(run_dir, gates, prices=prices, recommend_by=recommend_by)
    if not quiet:
        for name, section in decision.variants.items():
            unsettled = [f"{g.gate} {g.status}" for g in section.gates if g.status != "pass"]
            detail = "every gate passes" if section.passes else "; ".join(unsettled) or section.status
            if section.sequential is not None:
                detail += f" ({sequential_note(section.sequential, is_reference=section.is_reference)})"
            _say(f"  {name:<10} {section.verdict:<12} {detail}")
            if section.open is not None:
                _say(f"  {'':<10} {'':<12} {section.open.message}")
        if decision.costs is not None:
            print("expected cost per 1,000 extractions (in parentheses: minus the reference's, interval):")
            print("\n".join("  " + line for line in text_table(cost_rows(decision.costs))))
            _say(_break_even_line(decision))
        _say(f"decision: {_decision_line(decision)} (exit status {decision.exit_status})")
        resume = _resume_line(decision, run_dir)
        if resume:
            _say(resume)
        _say(f"decision record: {run_dir / DECISION_MD}")
    return decision.exit_status


EXECUTOR_FLAGS = ("executor", "ray_address", "ray_retries")
"""The destinations of the flags, which say where a run goes on, not how it was started."""


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    """Add the executor flags to a command's parser."""
    group = parser.add_argument_group("where variants are evaluated")
    group.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: every variant kept warm in a worker process here, evaluated in interleaved rounds on "
        "the same cases (default); ray: each variant as a Ray task, side by side on a cluster's nodes "
        "(needs: pip install 'quantgate[cluster]')",
    )
    group.add_argument(
        "--ray-address",
        metavar="auto|HOST:PORT",
        help="--executor ray: the cluster to connect to (auto: the one RAY_ADDRESS or `ray start` on this "
        "machine names); default: a local Ray started for the run",
    )
    group.add_argument(
        "--ray-retries",
        type=non_negative_int,
        default=1,
        help="--executor ray: times a variant's task that died (node lost, out of memory) is started again "
        "for the cases it had not sent back (default 1)",
    )


@contextmanager
def cli_executor(args: argparse.Namespace, *, progress: bool) -> Iterator[VariantExecutor]:
    """The executor the flags ask for, connected (Ray) for the length of the block.

    Raises:
        UsageError: `--ray-address` or `--ray-retries` without `--executor ray`.
        RuntimeError: Ray is not installed, or the cluster cannot be reached (`ClusterError`).
    """
    if args.executor != "ray":
        if args.ray_address is not None or args.ray_retries != 1:
            raise UsageError("--ray-address and --ray-retries go with --executor ray")
        from quantgate.evaluate.scheduler._executor import LocalExecutor

        yield LocalExecutor()
        return
    from quantgate.cluster import RayExecutor

    with RayExecutor.connect(args.ray_address, retries=args.ray_retries, progress=progress) as executor:
        yield executor
