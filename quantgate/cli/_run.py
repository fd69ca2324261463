"""`quantgate run`: evaluate variants on a dataset and write runs/<run-id>/, then decide and report."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.errors import UsageError, require_extra
from quantgate._formatting import terminal_text
from quantgate.cli._common import (
    DEFAULT_BUDGET_MINUTES,
    DEFAULT_RUN_DATASET,
    EXECUTOR_FLAGS,
    add_cost_flags,
    add_examples_flag,
    add_executor_flags,
    add_gate_flags,
    check_output_dir,
    check_variant_files,
    cli_costs,
    cli_dataset,
    cli_executor,
    cli_gates,
    cli_variants,
    non_negative_int,
    positive_float,
    positive_int,
    report_decision,
)
from quantgate.cli._exports import EXPORT_FLAGS, add_export_flags, check_export_flags, write_exports
from quantgate.cli._load import add_load_flags, load_into, load_options
from quantgate.cli._run_shared import cli_run_options, write_report_after_run
from quantgate.evaluate._options import (
    DEFAULT_LATENCY_CASES,
    DEFAULT_NOISE_FLOOR_CASES,
    DEFAULT_TOKEN_FIDELITY_CASES,
)
from quantgate.evaluate._predictions import dump_json
from quantgate.rundir._embedding_files import DEFAULT_K

if TYPE_CHECKING:
    from quantgate.cli._common import Commands
    from quantgate.evaluate.scheduler._executor import VariantExecutor
    from quantgate.inputs._gates import Gates
    from quantgate.inputs._variants import VariantSet


def _run(args: argparse.Namespace, *, defaults: Mapping[str, Any]) -> int:
    check_export_flags(args)  # a --junit path that cannot be written fails before the run
    if args.resume is not None:
        return _resume(args, defaults)
    if args.suite is not None:
        from quantgate.cli._suite import run_suite_command

        return run_suite_command(args)
    from quantgate.evaluate._evaluation_run import run_evaluation

    gates = cli_gates(args)  # a bad gates file fails before the run, not after it
    cli_costs(args)  # so does a bad costs file
    check_output_dir(Path(args.out))
    if args.embeddings:
        require_extra("embed", "--embeddings")
    load = load_options(args) if args.load else None
    default_budget = None if args.dataset else DEFAULT_BUDGET_MINUTES
    options = cli_run_options(args, gates=gates, default_budget=default_budget)
    dataset = cli_dataset(args.dataset or DEFAULT_RUN_DATASET, args.skip_invalid_cases)
    variant_set = cli_variants(args.variants)
    with cli_executor(args, progress=not args.json) as executor:
        run_dir = run_evaluation(
            dataset, variant_set, reference=args.reference, options=options, executor=executor
        )
        if args.embeddings:
            _embeddings_into(run_dir, variant_set, args, executor)
        status = _conclude(run_dir, gates, args)
        if load is not None:
            load_into(
                run_dir, dataset, variant_set, load, out=Path(args.out), quiet=args.json, executor=executor
            )
    if not args.no_report:
        write_report_after_run(run_dir, quiet=args.json)
    write_exports(run_dir, args, quiet=args.json)
    return status


def _embeddings_into(
    run_dir: Path, variant_set: VariantSet, args: argparse.Namespace, executor: VariantExecutor
) -> None:
    """`--embeddings`: the variants' embeddings of the run's case texts, into its summary and qdrant/."""
    from quantgate.embeddings._embedding_run import EmbeddingOptions, add_embeddings
    from quantgate.evaluate._signals import note_run_dir
    from quantgate.render._embedding_table import embedding_rows, render_rows

    options = EmbeddingOptions(k=args.k, qdrant_url=args.qdrant_url, progress=not args.json)
    try:
        summary = add_embeddings(run_dir, variant_set.variants, options=options, executor=executor)
    except KeyboardInterrupt as exc:
        note_run_dir(exc, run_dir)
        raise
    if not args.json:
        rows = [
            (v.name, v.file_size_mb, v.embeddings, v.embeddings_error)
            for v in summary.variants
            if v.status == "ok"
        ]
        print(render_rows(embedding_rows(rows), k=args.k))


def _conclude(run_dir: Path, gates: Gates, args: argparse.Namespace) -> int:
    """Print the summary (table or JSON) and the decision; return the decision's exit status, or
    the incomplete-run status when the run directory does not hold the whole run."""
    from quantgate.render._summary_table import render_summary
    from quantgate.rundir._completeness import run_completeness
    from quantgate.rundir._decision import EXIT_STATUS
    from quantgate.rundir._store import load_run

    summary = load_run(run_dir).summary
    if args.json:
        print(dump_json(summary.model_dump(mode="json")))
    else:
        print(terminal_text(render_summary(summary), lines=True))
        print(terminal_text(f"run directory: {run_dir}"))
    prices, recommend_by = cli_costs(args)
    status = report_decision(run_dir, gates, quiet=args.json, prices=prices, recommend_by=recommend_by)
    completeness = run_completeness(run_dir)
    if completeness.complete:
        return status
    print(
        terminal_text(f"quantgate: warning: {run_dir}: {completeness.notice()}", lines=True), file=sys.stderr
    )
    return EXIT_STATUS["incomplete_run"]


_RESUME_KEEPS = (
    "dataset", "variants", "budget", "json", "no_report", "resume", "costs", "recommend", *EXECUTOR_FLAGS,
    *EXPORT_FLAGS,
)  # fmt: skip
"""The flags `--resume` takes: the inputs (checked to be the run's), a budget for the rest, how
to print, where the rest runs, the prices its decision weighs, and where its results also go
(JUnit, MLflow). Every other flag would change how the run was started, so it is refused."""


def _resume(args: argparse.Namespace, defaults: Mapping[str, Any]) -> int:
    """`run --resume RUN_DIR`: go on with an interrupted run as it was started, then decide and report."""
    from quantgate.evaluate._evaluation_run import resume_evaluation
    from quantgate.evaluate._resume import planned_variants
    from quantgate.inputs._gates import Gates
    from quantgate.rundir._store import read_summary
    from quantgate.suite._suite_records import is_suite_dir

    changed = [
        name
        for name, default in defaults.items()
        if name not in _RESUME_KEEPS and getattr(args, name) != default
    ]
    if changed:
        flags = ", ".join("--" + name.replace("_", "-") for name in changed)
        raise UsageError(
            f"--resume goes on with the run as it was started; {flags} cannot be given with it "
            "(--dataset and --variants are checked to be the run's; --budget sets the rest's)"
        )
    run_dir = Path(args.resume)
    if is_suite_dir(run_dir):  # a suite's directory: each task not complete goes on
        from quantgate.cli._suite import resume_suite_command

        return resume_suite_command(args)
    cli_costs(args)  # a bad costs file fails before the rest of the run, not after it
    dataset = cli_dataset(args.dataset, skip_invalid_cases=False) if args.dataset else None
    variant_set = cli_variants(args.variants) if args.variants else planned_variants(run_dir)
    if not args.variants:
        check_variant_files(variant_set)
    with cli_executor(args, progress=not args.json) as executor:
        run_dir = resume_evaluation(
            run_dir,
            dataset=dataset,
            variant_set=variant_set,
            budget_s=args.budget * 60 if args.budget is not None else None,
            progress=not args.json,
            executor=executor,
        )
    summary_gates = read_summary(run_dir).options
    gates = summary_gates.gates if summary_gates is not None and summary_gates.gates else Gates()
    status = _conclude(run_dir, gates, args)
    if not args.no_report:
        write_report_after_run(run_dir, quiet=args.json)
    write_exports(run_dir, args, quiet=args.json)
    return status


def _add_dataset_flags(run: argparse.ArgumentParser) -> None:
    """`--suite` or `--dataset`: the datasets to evaluate."""
    datasets = run.add_mutually_exclusive_group()
    datasets.add_argument(
        "--suite",
        metavar="FILE.toml",
        help="a suite file: several datasets (tasks), each with its gates, run with the same variants into "
        "one run directory (RUN_DIR/tasks/<task>/); a variant passes only if it passes every task "
        "(docs/suites.md)",
    )
    datasets.add_argument(
        "--dataset",
        help=f"dataset directory or bundled name (default: {DEFAULT_RUN_DATASET}, with a "
        f"{DEFAULT_BUDGET_MINUTES:g}-minute budget unless --budget is given)",
    )


def _add_input_flags(run: argparse.ArgumentParser) -> None:
    """What to evaluate: the dataset (or a suite of them), the variants, the reference, how many cases."""
    _add_dataset_flags(run)
    run.add_argument(
        "--variants",
        nargs="+",
        metavar="FILE|SPEC",
        help="variants .toml files and/or llamacpp:PATH.gguf / ollama:TAG / openai:MODEL@BASE_URL "
        "(default: the ladder)",
    )
    run.add_argument(
        "--reference", help="name of the reference variant (default: the file's, else the first)"
    )
    sample = run.add_mutually_exclusive_group()
    sample.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="a fixed sample: N cases balanced across languages, judged with the betting confidence "
        "interval (default: sequential, in rounds, each candidate stopping once its accuracy gates are "
        "settled)",
    )
    sample.add_argument(
        "--all",
        action="store_true",
        help="a fixed sample of every case, judged with the betting confidence interval",
    )
    run.add_argument(
        "--max-cases", type=positive_int, metavar="N", help="sequential: at most N cases (default: all)"
    )
    run.add_argument(
        "--budget",
        type=positive_float,
        metavar="MINUTES",
        help="sequential: minutes of case evaluation, all variants together; a round starts only when "
        "its expected time fits in what is left (loads, warm-ups and token fidelity come on top; default: "
        f"{DEFAULT_BUDGET_MINUTES:g} for the default dataset, none with --dataset; with --resume: more "
        "minutes for the rest)",
    )
    add_examples_flag(run)


def _add_noise_floor_flag(run: argparse.ArgumentParser) -> None:
    """The noise floor's arm: how many cases the reference answers a second time."""
    run.add_argument(
        "--noise-floor-cases",
        type=non_negative_int,
        default=DEFAULT_NOISE_FLOOR_CASES,
        metavar="N",
        help=f"the reference answers the first N cases again, one at a time, against its first answers: "
        f"the runtime's own noise floor (default {DEFAULT_NOISE_FLOOR_CASES}; 0: off; apart from --budget)",
    )


def _add_run_flags(run: argparse.ArgumentParser) -> None:
    """How to evaluate and what to write: concurrency, repairs, output, token fidelity, report, load."""
    run.add_argument(
        "--concurrency",
        type=positive_int,
        default=None,
        help="cases in flight per variant (default: 4 slots in one context for embedded variants, "
        "1 otherwise)",
    )
    run.add_argument(
        "--max-repairs",
        type=non_negative_int,
        default=2,
        help="extra attempts after an invalid output (default 2)",
    )
    run.add_argument("--out", default="runs", help="where run directories go (default: ./runs)")
    run.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    run.add_argument(
        "--no-token-fidelity",
        action="store_true",
        help="skip the token-level KLD / top-1 measurement of embedded variants against the reference",
    )
    run.add_argument(
        "--token-fidelity-cases",
        type=positive_int,
        default=DEFAULT_TOKEN_FIDELITY_CASES,
        metavar="N",
        help=f"measure token fidelity on the run's first N cases (default {DEFAULT_TOKEN_FIDELITY_CASES}; "
        "it costs about as much per case as the evaluation)",
    )
    run.add_argument(
        "--skip-invalid-cases",
        action="store_true",
        help="leave out dataset lines with errors (reported) instead of refusing the dataset",
    )
    run.add_argument(
        "--no-report", action="store_true", help="do not write RUN_DIR/report/report.html at the end"
    )
    run.add_argument(
        "--no-cache",
        action="store_true",
        help="evaluate the reference on every case, not taking its answers from the reference cache "
        "(kept by runs with the same reference file, dataset, prompt and decoding settings)",
    )
    run.add_argument(
        "--load", action="store_true", help="after the evaluation, run the load test into the same run"
    )


def _add_verification_flags(run: argparse.ArgumentParser) -> None:
    """`--no-verify` and `--latency-cases`."""
    run.add_argument(
        "--no-verify",
        action="store_true",
        help="decode every case of every variant; by default a candidate that can (an embedded variant) "
        "reads the reference's answer to each prompt at prefill speed and decodes only from where its own "
        "answer would differ (docs/performance.md#verification)",
    )
    run.add_argument(
        "--latency-cases",
        type=positive_int,
        default=DEFAULT_LATENCY_CASES,
        metavar="N",
        help=f"with verification, the run's first N cases are decoded in full by every variant, the "
        f"reference too when cached; every latency figure comes from them (default {DEFAULT_LATENCY_CASES})",
    )


def _add_embedding_flags(run: argparse.ArgumentParser) -> None:
    """`--embeddings` and its settings."""
    run.add_argument(
        "--embeddings",
        action="store_true",
        help="after the evaluation, measure each variant's embeddings of the run's case texts against the "
        "reference's, indexed in Qdrant (as `quantgate embed`; figures under `embeddings` in summary.json)",
    )
    run.add_argument(
        "--k",
        type=positive_int,
        default=DEFAULT_K,
        help=f"--embeddings: neighbours per query (default {DEFAULT_K})",
    )
    run.add_argument(
        "--qdrant-url",
        metavar="URL",
        help="--embeddings: a Qdrant server (default: a local store, RUN_DIR/qdrant)",
    )


def add_parser(commands: Commands) -> None:
    """Add `quantgate run`, with the load flags of `--load` and the gate flags."""
    run = commands.add_parser("run", help="evaluate variants on a dataset and write runs/<run-id>/")
    _add_input_flags(run)
    _add_run_flags(run)
    _add_verification_flags(run)
    _add_noise_floor_flag(run)
    _add_embedding_flags(run)
    add_load_flags(run, prefix="load-")
    add_gate_flags(run)
    add_cost_flags(run)
    add_executor_flags(run)
    add_export_flags(run)
    run.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="go on with an interrupted run in its own directory, as it was started: its complete "
        "variants are kept, the others go on from their records (each case recorded once); also a "
        "sequential run whose budget left candidates open (with --budget MINUTES for the rest); "
        "--dataset and --variants, if given, must be the run's",
    )
    defaults = {action.dest: action.default for action in run._actions if action.dest != "help"}
    run.set_defaults(handler=functools.partial(_run, defaults=defaults))
