"""Concurrency and reproducibility: the same run at `--concurrency 1` and at N, on the bundled datasets.

For each bundled dataset, `run_evaluation` of the F16 reference and Q4_K_M over `--limit`
cases, once with one case at a time and once with N cases decoded side by side in one
context (`SlotScheduler`), then `decide` on each. It prints, per dataset and variant, how
many outputs are identical, the field accuracy and format validity at 1 and at N, and each
variant's verdict at 1 and at N; then one JSON line with all the figures.

    python benchmarks/concurrency.py [--limit 6] [--n 4] [--datasets invoices ...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from quantgate.backends import EMBEDDED_SLOTS
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import bundled_datasets, load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.ladder._quantize import build_ladder
from quantgate.rundir._store import load_run, read_records

VARIANTS = ("F16", "Q4_K_M")


def one_run(dataset: str, variants: VariantSet, limit: int, concurrency: int, out: Path) -> dict[str, Any]:
    """Raw outputs, figures and verdicts of one run."""
    options = RunOptions(limit=limit, concurrency=concurrency, out=out, progress=False, token_fidelity=False)
    run_dir = run_evaluation(load_dataset(dataset), variants, options=options)
    decision = decide(run_dir)
    summary = load_run(run_dir).summary
    raw: dict[str, dict[str, str | None]] = {name: {} for name in VARIANTS}
    for record in read_records(run_dir):
        raw[record.variant][record.case_id] = record.raw
    verdicts = {
        name: "passes"
        if v.passes
        else ", ".join(f"{g.gate} {g.status}" for g in v.gates if g.status != "pass")
        for name, v in decision.variants.items()
    }
    figures = {
        e.name: {"field_accuracy": e.field_accuracy, "format_validity": e.format_validity, "wall_s": e.wall_s}
        for e in summary.variants
    }
    return {"raw": raw, "figures": figures, "verdicts": verdicts, "chosen": decision.recommended}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--n", type=int, default=EMBEDDED_SLOTS)
    parser.add_argument("--datasets", nargs="+", default=bundled_datasets())
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    variants = VariantSet(reference="F16", variants=[v for v in ladder.variants if v.name in VARIANTS])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            one = one_run(name, variants, args.limit, 1, Path(tmp))
            many = one_run(name, variants, args.limit, args.n, Path(tmp))
            for variant in VARIANTS:
                cases = one["raw"][variant].keys() & many["raw"][variant].keys()
                same = sum(one["raw"][variant][c] == many["raw"][variant][c] for c in cases)
                row = {
                    "dataset": name,
                    "variant": variant,
                    "cases": len(cases),
                    "identical_outputs": same,
                    "field_accuracy_1": one["figures"][variant]["field_accuracy"],
                    "field_accuracy_n": many["figures"][variant]["field_accuracy"],
                    "format_validity_1": one["figures"][variant]["format_validity"],
                    "format_validity_n": many["figures"][variant]["format_validity"],
                    "wall_s_1": one["figures"][variant]["wall_s"],
                    "wall_s_n": many["figures"][variant]["wall_s"],
                    "verdict_1": one["verdicts"].get(variant),
                    "verdict_n": many["verdicts"].get(variant),
                    "chosen_1": one["chosen"],
                    "chosen_n": many["chosen"],
                }
                results.append(row)
                print(
                    f"{name:16} {variant:7} identical {same}/{len(cases)}  accuracy "
                    f"{row['field_accuracy_1']:.3f} -> {row['field_accuracy_n']:.3f}  validity "
                    f"{row['format_validity_1']:.2f} -> {row['format_validity_n']:.2f}  wall "
                    f"{row['wall_s_1']:.0f} s -> {row['wall_s_n']:.0f} s  verdict {row['verdict_1']} -> "
                    f"{row['verdict_n']}"
                )
    print(json.dumps({"n": args.n, "limit": args.limit, "results": results}))


if __name__ == "__main__":
    main()
