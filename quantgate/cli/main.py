"""The `quantgate` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from quantgate.cli_common import DEFAULT_DATASET, DEFAULT_LIMIT, cli_dataset, cli_variants
from quantgate.cli_load import add_load_command, add_load_flags, load_into, load_options
from quantgate.dataset import bundled_datasets, check_dataset, load_dataset, resolve_dataset
from quantgate.gates import GATE_KEYS, Gates, load_gates
from quantgate.scoring import dump_json, read_predictions, render_report, score_predictions


def _datasets_check(args: argparse.Namespace) -> int:
    failed = False
    for name in args.dirs:
        try:
            path = resolve_dataset(name)
        except FileNotFoundError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed = True
            continue
        dataset, problems = check_dataset(path)
        for problem in problems:
            print(f"{problem.severity}: {path}/{problem}", file=sys.stderr)
        if dataset is None:
            errors = sum(p.severity == "error" for p in problems)
            print(f"FAIL {path}: {errors} error(s)")
            failed = True
        else:
            labeled = sum(c.expected is not None for c in dataset.cases)
            counts = f"{len(dataset.cases)} cases ({labeled} labeled), {len(dataset.examples)} examples"
            print(f"ok   {path}: {counts}")
    return 1 if failed else 0


def _datasets_list(args: argparse.Namespace) -> int:
    for name in bundled_datasets():
        dataset = load_dataset(name)
        tags = sorted({t for c in dataset.cases for t in c.tags})
        print(f"{name:<20} {len(dataset.cases):>4} cases   tags: {', '.join(tags)}")
    return 0


def _score(args: argparse.Namespace) -> int:
    dataset = cli_dataset(args.dataset, args.skip_invalid_cases)
    predictions, problems = read_predictions(Path(args.predictions))
    for problem in problems:
        print(problem, file=sys.stderr)
    report = score_predictions(dataset, predictions)
    print(dump_json(report.as_dict()) if args.json else render_report(report))
    return 1 if any(p.severity == "error" for p in problems) else 0


def _ladder(args: argparse.Namespace) -> int:
    from quantgate.ladder import build_ladder

    quants = [q.strip() for q in args.quants.split(",") if q.strip()]
    variant_set, variants_file = build_ladder(
        source=Path(args.source) if args.source else None,
        quants=quants,
        out=Path(args.out) if args.out else None,
    )
    for variant in variant_set.variants:
        size = (variant.file_size_bytes or 0) / 2**20
        print(f"{variant.name:<8} {size:8.1f} MiB  {variant.model}")
    print(f"variants file: {variants_file}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from quantgate.run import RunOptions, run_evaluation
    from quantgate.runstore import load_run
    from quantgate.summary_table import render_summary

    gates = _gates(args)  # a bad gates file fails before the run, not after it
    load = load_options(args) if args.load else None
    dataset_name = args.dataset or DEFAULT_DATASET
    limit = args.limit if args.limit is not None or args.dataset else DEFAULT_LIMIT
    dataset = cli_dataset(dataset_name, args.skip_invalid_cases)
    variant_set = cli_variants(args.variants)
    options = RunOptions(
        limit=limit,
        concurrency=args.concurrency,
        max_repairs=args.max_repairs,
        out=Path(args.out),
        progress=not args.json,
        token_fidelity=not args.no_token_fidelity,
    )
    run_dir = run_evaluation(dataset, variant_set, reference=args.reference, options=options)
    summary = load_run(run_dir).summary
    if args.json:
        print(dump_json(summary))
    else:
        print(render_summary(summary))
        print(f"run directory: {run_dir}")
    status = _report_decision(run_dir, gates, quiet=args.json)
    if load is not None:
        load_into(run_dir, dataset, variant_set, load, out=Path(args.out), quiet=args.json)
    if not args.no_report:
        _write_report_after_run(run_dir, quiet=args.json)
    return status


def _write_report_after_run(run_dir: Path, *, quiet: bool) -> None:
    """Write the HTML report; a failure here is reported and the run, already on disk, is kept."""
    from quantgate.report import write_report

    try:
        page = write_report(run_dir)
    except Exception as exc:  # the run and its decision are written: never lose them to a chart bug
        print(
            f"quantgate: the report could not be written ({type(exc).__name__}: {exc}); the run and its "
            f"decision are kept in {run_dir}; retry with: quantgate report {run_dir}",
            file=sys.stderr,
        )
        return
    if not quiet:
        print(f"report: {page}")


def _report(args: argparse.Namespace) -> int:
    from quantgate.report import write_report

    print(write_report(Path(args.run_dir), max_failures=args.max_failures))
    return 0


def _gates(args: argparse.Namespace) -> Gates:
    overrides = {key: getattr(args, key) for key in GATE_KEYS}
    return load_gates(args.gates, overrides=overrides)


def _report_decision(run_dir: Path, gates: Gates, *, quiet: bool = False) -> int:
    from quantgate.decision import DECISION_MD, decide

    decision = decide(run_dir, gates)
    if not quiet:
        chosen = decision["recommended"]
        for name, section in decision["variants"].items():
            failed = [f"{g['gate']} {g['status']}" for g in section["gates"] if g["status"] != "pass"]
            verdict = "passes every gate" if section["passes"] else "; ".join(failed) or section["status"]
            print(f"  {name:<10} {verdict}")
        if chosen is None:
            print("decision: no variant passes every gate (exit status 3)")
        else:
            note = (
                " (the reference: no quantized variant is shown safe)"
                if decision["recommended_is_reference"]
                else ""
            )
            print(f"decision: {chosen}{note}")
        print(f"decision record: {run_dir / DECISION_MD}")
    return int(decision["exit_status"])


def _decide(args: argparse.Namespace) -> int:
    gates = _gates(args)
    return _report_decision(Path(args.run_dir), gates)


def _compare(args: argparse.Namespace) -> int:
    from evaluators.comparison import ComparisonOptions
    from quantgate.compare import compare_runs, render_comparison

    gates = _gates(args)
    options = ComparisonOptions(
        margin=gates.equivalence_margin, min_cases=gates.min_cases, confidence=gates.confidence
    )
    result = compare_runs(args.run_a, args.run_b, options=options)
    print(dump_json(result) if args.json else render_comparison(result))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from quantgate.doctor import run_checks

    checks = run_checks(ollama_tags=args.ollama, ladder_dir=Path(args.ladder) if args.ladder else None)
    for check in checks:
        print(check)
    return 1 if any(c.ok is False for c in checks) else 0


def _modelfiles(args: argparse.Namespace) -> int:
    from quantgate.ladder import VARIANTS_FILE, default_ladder_dir
    from quantgate.modelfiles import write_modelfiles
    from quantgate.variants import load_variants_file

    variants_file = Path(args.variants) if args.variants else default_ladder_dir() / VARIANTS_FILE
    if not variants_file.is_file():
        raise FileNotFoundError(f"no variants file at {variants_file}; run: quantgate ladder")
    written = write_modelfiles(load_variants_file(variants_file), Path(args.dir))
    print("Modelfiles written; to serve the exact files quantgate evaluated with Ollama, run:")
    for _, command in written:
        print(f"  {command}")
    return 0


def _add_gate_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("gates (flags override the file; fractions: 0.05 = 5 points)")
    group.add_argument(
        "--gates", metavar="FILE.toml", help="gates file (see quantgate/gates.py for the keys)"
    )
    for key, info in Gates.model_fields.items():
        if key == "format_version":
            continue
        kind = int if key.startswith("min_") and key.endswith("cases") else float
        group.add_argument(
            "--" + key.replace("_", "-"), type=kind, metavar="N", help=f"default: {info.default}"
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="quantgate",
        description="Is a quantized LLM good enough to replace its reference for structured extraction?",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    datasets = commands.add_parser("datasets", help="check and list datasets")
    datasets_cmds = datasets.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")
    check = datasets_cmds.add_parser("check", help="validate dataset directories; exit 1 on any error")
    check.add_argument("dirs", nargs="+", metavar="DIR", help="dataset directory or bundled name")
    check.set_defaults(handler=_datasets_check)
    listing = datasets_cmds.add_parser("list", help="list the bundled datasets")
    listing.set_defaults(handler=_datasets_list)

    score = commands.add_parser("score", help="score a predictions file against a dataset's gold")
    score.add_argument("--dataset", required=True, help="dataset directory or bundled name")
    score.add_argument(
        "--predictions",
        required=True,
        metavar="FILE.jsonl",
        help='lines of {"id": ..., "output": {...}} or {"id": ..., "raw": "..."}',
    )
    score.add_argument("--json", action="store_true", help="print a machine-readable summary")
    score.add_argument(
        "--skip-invalid-cases",
        action="store_true",
        help="leave out dataset lines with errors (reported) instead of refusing the dataset",
    )
    score.set_defaults(handler=_score)

    ladder = commands.add_parser(
        "ladder", help="build the embedded quantization ladder (F16 reference + quants)"
    )
    ladder.add_argument("--source", help="GGUF to start from (default: the bundled Gemma 3 270M Q4_K_M)")
    ladder.add_argument(
        "--quants",
        default="Q8_0,Q5_K_M,Q4_K_M",
        help="comma-separated llama.cpp types (also Q6_K, Q3_K_M, Q2_K, ...); default %(default)s",
    )
    ladder.add_argument("--out", help="output directory (default: the user cache dir, quantgate/ladder)")
    ladder.set_defaults(handler=_ladder)

    run = commands.add_parser("run", help="evaluate variants on a dataset and write runs/<run-id>/")
    run.add_argument(
        "--dataset",
        help=f"dataset directory or bundled name (default: {DEFAULT_DATASET}, "
        f"{DEFAULT_LIMIT} cases unless --limit is given)",
    )
    run.add_argument(
        "--variants",
        nargs="+",
        metavar="FILE|SPEC",
        help="variants .toml files and/or llamacpp:PATH.gguf / ollama:TAG (default: the ladder)",
    )
    run.add_argument(
        "--reference", help="name of the reference variant (default: the file's, else the first)"
    )
    run.add_argument("--limit", type=int, help="evaluate only N cases, balanced across languages")
    run.add_argument("--concurrency", type=int, default=1, help="cases in flight per variant (default 1)")
    run.add_argument(
        "--max-repairs", type=int, default=2, help="extra attempts after an invalid output (default 2)"
    )
    run.add_argument("--out", default="runs", help="where run directories go (default: ./runs)")
    run.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    run.add_argument(
        "--no-token-fidelity",
        action="store_true",
        help="skip the token-level KLD / top-1 measurement of embedded variants against the reference",
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
        "--load", action="store_true", help="after the evaluation, run the load test into the same run"
    )
    add_load_flags(run, prefix="load-")
    _add_gate_flags(run)
    run.set_defaults(handler=_run)

    add_load_command(commands)

    decide = commands.add_parser(
        "decide",
        help="judge a run against the gates; write decision.json/.md; exit 0 if a variant passes, 3 if none",
    )
    decide.add_argument("run_dir", metavar="RUN_DIR")
    _add_gate_flags(decide)
    decide.set_defaults(handler=_decide)

    report = commands.add_parser(
        "report", help="write RUN_DIR/report/report.html (self-contained) and its PNG charts; print its path"
    )
    report.add_argument("run_dir", metavar="RUN_DIR")
    report.add_argument(
        "--max-failures",
        type=int,
        default=1000,
        metavar="N",
        help="at most N case x variant entries in the failure browser (default %(default)s)",
    )
    report.set_defaults(handler=_report)

    compare = commands.add_parser(
        "compare", help="what changed between two runs (B - A), with the statistics"
    )
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _add_gate_flags(compare)
    compare.set_defaults(handler=_compare)

    doctor = commands.add_parser("doctor", help="check llama.cpp, the model package, the ladder and Ollama")
    doctor.add_argument("--ollama", nargs="*", default=[], metavar="TAG", help="Ollama tags that must exist")
    doctor.add_argument("--ladder", help="ladder directory (default: the user cache dir)")
    doctor.set_defaults(handler=_doctor)

    ollama = commands.add_parser("ollama", help="Ollama helpers")
    ollama_cmds = ollama.add_subparsers(dest="ollama_command", required=True, metavar="ACTION")
    modelfiles = ollama_cmds.add_parser("modelfiles", help="write a Modelfile per ladder GGUF")
    modelfiles.add_argument("dir", metavar="DIR")
    modelfiles.add_argument("--variants", help="variants file (default: the ladder's)")
    modelfiles.set_defaults(handler=_modelfiles)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `quantgate` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"quantgate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("quantgate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
