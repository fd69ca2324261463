"""Grammar engines: llama.cpp's GBNF sampler against llguidance, on the bundled datasets.

For each bundled dataset, three `quantgate run`s (`run_evaluation`) of the same model file,
one per grammar setting (a run's variants share one): "gbnf", "llguidance", and
"llguidance+ff" (llguidance with `fast_forward`, the tokens the schema forces decoded in one
chunk), at one case at a time (so batching cannot make the outputs differ) and without token
fidelity. Per dataset and setting it prints wall time, throughput, format validity and field
accuracy, and how many outputs are identical to GBNF's; then one JSON line with all the figures.

    python benchmarks/grammar_engines.py [--variant Q4_K_M] [--limit 6] [--datasets invoices ...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import bundled_datasets, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.ladder._quantize import build_ladder
from quantgate.rundir._store import load_run, read_records

SETTINGS: dict[str, dict[str, Any]] = {
    "gbnf": {"grammar_engine": "gbnf"},
    "llguidance": {"grammar_engine": "llguidance"},
    "llguidance+ff": {"grammar_engine": "llguidance", "fast_forward": True},
}


def compare(dataset_name: str, model: Variant, limit: int, out: Path) -> dict[str, Any]:
    """Every setting on one dataset (one run each): figures per setting and outputs identical to GBNF's."""
    options = RunOptions(limit=limit, concurrency=1, out=out, progress=False, token_fidelity=False)
    raw: dict[str, dict[str, str | None]] = {}
    figures: dict[str, Any] = {"dataset": dataset_name}
    for engine, setting in SETTINGS.items():
        name = engine.replace("+", "-")  # a variant name has letters, digits, '-', '_' and '.'
        variant = model.model_copy(update={"name": name, "options": setting})
        run_dir = run_evaluation(load_dataset(dataset_name), VariantSet(variants=[variant]), options=options)
        (entry,) = load_run(run_dir).summary.variants
        raw[engine] = {record.case_id: record.raw for record in read_records(run_dir)}
        figures[engine] = {
            "status": entry.status,
            "error": entry.error,
            "wall_s": entry.wall_s,
            "throughput_tokens_per_s": entry.throughput_tokens_per_s,
            "format_validity": entry.format_validity,
            "field_accuracy": entry.field_accuracy,
        }
    for engine in SETTINGS:
        cases = raw["gbnf"].keys() & raw[engine].keys()
        figures[engine]["identical_to_gbnf"] = sum(raw["gbnf"][c] == raw[engine][c] for c in cases)
        figures[engine]["cases"] = len(cases)
    return figures


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="Q4_K_M")
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--datasets", nargs="+", default=bundled_datasets())
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    model = next(v for v in ladder.variants if v.name == args.variant)
    results = []
    print(
        f"{'dataset':16} {'setting':14} {'wall s':>7} {'tok/s':>6} {'valid':>6} {'accuracy':>8} {'same':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            figures = compare(name, model, args.limit, Path(tmp))
            results.append(figures)
            for engine in SETTINGS:
                row = figures[engine]
                print(
                    f"{name:16} {engine:14} {_fmt(row['wall_s'], '7.1f')} "
                    f"{_fmt(row['throughput_tokens_per_s'], '6.1f')} {_fmt(row['format_validity'], '6.0%')} "
                    f"{_fmt(row['field_accuracy'], '8.1%')} {row['identical_to_gbnf']:>3}/{row['cases']}"
                )
    print(json.dumps({"variant": args.variant, "limit": args.limit, "datasets": results}))


if __name__ == "__main__":
    main()
