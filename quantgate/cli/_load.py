"""The `quantgate load` command, and the load flags `quantgate run --load` shares."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import UsageError
from quantgate._formatting import terminal_text
from quantgate.cli._common import (
    DEFAULT_DATASET,
    DEFAULT_LIMIT,
    add_examples_flag,
    add_executor_flags,
    check_output_dir,
    cli_dataset,
    cli_executor,
    cli_variants,
    non_negative_int,
    positive_float,
    positive_int,
)
from quantgate.evaluate._predictions import dump_json
from quantgate.inputs._dataset import Dataset
from quantgate.rundir._files import LOAD_FILE

if TYPE_CHECKING:
    from quantgate.cli._common import Commands
    from quantgate.evaluate.scheduler._executor import VariantExecutor
    from quantgate.inputs._variants import VariantSet
    from quantgate.loadtest._level_specs import LoadLevel
    from quantgate.loadtest._levels import LoadOptions


def _levels(args: argparse.Namespace) -> tuple[LoadLevel, ...]:
    """Closed levels from the concurrency flag, or Poisson levels from `--rate`; a flag of the
    other kind of level is refused, not ignored."""
    from quantgate.loadtest._level_specs import DEFAULT_LEVELS, parse_levels, poisson_levels

    if args.arrivals == "closed":
        poisson_only = {"--rate": args.rate, "--max-in-flight": args.max_in_flight, "--seed": args.seed}
        for flag, value in poisson_only.items():
            if value is not None:
                raise UsageError(f"{flag} applies to --arrivals poisson only")
        return parse_levels(args.load_concurrency or DEFAULT_LEVELS, flag=args.load_concurrency_flag)
    if args.rate is None:
        raise UsageError("--arrivals poisson needs --rate R[,R2,...] (requests per second)")
    if args.load_concurrency is not None:
        raise UsageError(
            "--arrivals poisson takes no concurrency levels; bound requests in flight with --max-in-flight"
        )
    return poisson_levels(args.rate, in_flight=args.max_in_flight)


def _seconds(milliseconds: float | None) -> float | None:
    return milliseconds / 1000 if milliseconds is not None else None


def load_options(args: argparse.Namespace) -> LoadOptions:
    """The load options of `load` and `run --load`; bad levels, bounds or targets fail before any work."""
    from quantgate.loadtest._levels import LoadOptions

    cases = args.limit if args.limit is not None or args.dataset else DEFAULT_LIMIT
    return LoadOptions(
        levels=_levels(args),
        requests=args.requests,
        duration_s=args.duration,
        max_tokens=args.max_tokens,
        cases=cases,
        examples=args.examples,
        **({"seed": args.seed} if args.seed is not None else {}),  # else LoadOptions' default
        ttft_target_s=_seconds(args.ttft_target_ms),
        itl_target_s=_seconds(args.itl_target_ms),
    )


def load_into(
    run_dir: Path | None,
    dataset: Dataset,
    variant_set: VariantSet,
    options: LoadOptions,
    *,
    out: Path,
    quiet: bool,
    executor: VariantExecutor | None = None,
) -> Path:
    from quantgate.loadtest._loadtest_run import run_load_test
    from quantgate.render._load_table import render_load
    from quantgate.rundir._store import load_run

    run_dir = run_load_test(
        dataset, variant_set, options=options, run_dir=run_dir, out=out, executor=executor
    )
    if not quiet:
        section = load_run(run_dir).summary.load
        if section is not None:
            print(terminal_text(render_load(section), lines=True))
        print(f"load records: {run_dir / LOAD_FILE}")
    return run_dir


def _load(args: argparse.Namespace) -> int:
    from quantgate.rundir._store import load_run

    options = load_options(args)
    check_output_dir(Path(args.out))
    dataset = cli_dataset(args.dataset or DEFAULT_DATASET, args.skip_invalid_cases)
    variant_set = cli_variants(args.variants)
    with cli_executor(args, progress=not args.json) as executor:
        run_dir = load_into(
            None, dataset, variant_set, options, out=Path(args.out), quiet=args.json, executor=executor
        )
    if args.json:
        section = load_run(run_dir).summary.load
        print(dump_json(section.model_dump(mode="json") if section else None))
    else:
        print(f"run directory: {run_dir}")
    return 0


def _add_arrival_flags(group: argparse._ArgumentGroup) -> None:
    """`--arrivals` and the flags of Poisson levels."""
    group.add_argument(
        "--arrivals",
        choices=("closed", "poisson"),
        default="closed",
        help="closed: concurrency levels of threads (default); poisson: open-loop arrivals at --rate",
    )
    group.add_argument(
        "--rate",
        metavar="R[,R2,...]",
        help="poisson: offered rates in requests/s, a level each (0.5,2); from 0.001 (a mean gap of about "
        "17 minutes: lower, a level takes hours) to 1000 (a gap of 1 ms, what a client can start on time)",
    )
    group.add_argument(
        "--max-in-flight",
        type=positive_int,
        metavar="N",
        help="poisson: requests in flight at most; later arrivals wait in the client (default 4)",
    )
    group.add_argument(
        "--seed", type=non_negative_int, help="poisson: seed of the arrival times (default 35)"
    )


def add_load_flags(parser: argparse.ArgumentParser, *, prefix: str) -> None:
    """The load flags; `prefix` names the concurrency flag (`--load-concurrency` under `run`)."""
    group = parser.add_argument_group("load (bounded: each level stops at --requests or --duration)")
    parser.set_defaults(load_concurrency_flag=f"--{prefix}concurrency")
    group.add_argument(
        f"--{prefix}concurrency",
        dest="load_concurrency",
        metavar="LEVELS",
        help="concurrency levels, named (normal=1,peak=4) or plain (1,4,8); default normal=1,peak=4",
    )
    group.add_argument(
        "--requests",
        type=positive_int,
        metavar="N",
        help="requests per level (default 8 when no --duration; at most 100,000: a level keeps each "
        "request's record in memory)",
    )
    group.add_argument(
        "--duration",
        type=positive_float,
        metavar="S",
        help="seconds per level after which no request starts (at most 86400, a day, so that a level ends)",
    )
    group.add_argument("--max-tokens", type=positive_int, metavar="N", help="generation limit per request")
    _add_arrival_flags(group)
    group.add_argument(
        "--ttft-target-ms",
        type=positive_float,
        metavar="MS",
        help="goodput: time-to-first-token target per request",
    )
    group.add_argument(
        "--itl-target-ms",
        type=positive_float,
        metavar="MS",
        help="goodput: mean inter-token gap target per request",
    )


def add_parser(commands: Commands) -> None:
    """Add `quantgate load`, with the load flags."""
    load = commands.add_parser(
        "load", help="send the dataset's prompts at several concurrency levels; latency, throughput, errors"
    )
    load.add_argument("--dataset", help=f"dataset directory or bundled name (default: {DEFAULT_DATASET})")
    load.add_argument(
        "--variants",
        nargs="+",
        metavar="FILE|SPEC",
        help="variants .toml files and/or llamacpp:PATH.gguf / ollama:TAG (default: the ladder)",
    )
    load.add_argument(
        "--limit",
        type=positive_int,
        help=f"send the prompts of N cases (default {DEFAULT_LIMIT} without --dataset)",
    )
    load.add_argument("--out", default="runs", help="where run directories go (default: ./runs)")
    load.add_argument("--json", action="store_true", help="print the summary's load section as JSON")
    load.add_argument("--skip-invalid-cases", action="store_true", help="leave out dataset lines with errors")
    add_examples_flag(load)
    add_load_flags(load, prefix="")
    add_executor_flags(load)
    load.set_defaults(handler=_load)
