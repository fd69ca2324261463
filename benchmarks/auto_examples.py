"""Few-shot examples taken from the cases, against a zero-shot prompt, on datasets without examples.jsonl.

For each dataset, a copy without its `examples.jsonl` (what most users bring: cases and a
schema) is evaluated with the F16 reference over the same `--limit` cases: with `--examples 3`
(three labeled cases as examples, left out of scoring), with `--examples none` (zero-shot), and,
where the dataset has one, with its own curated `examples.jsonl`. All runs score the same cases:
the others leave the three example cases out too. It prints field accuracy, format validity and
the trivial baseline (always null or the majority value, whichever is higher) per dataset and
prompt, then one JSON line.

    python benchmarks/auto_examples.py [--limit 10] [--datasets contacts-events ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import (
    EXAMPLES_FILE,
    bundled_datasets,
    load_dataset,
    resolve_dataset,
    write_dataset,
)
from quantgate.inputs._examples import DEFAULT_EXAMPLES, choose_examples
from quantgate.inputs._variants import VariantSet
from quantgate.ladder._quantize import build_ladder
from quantgate.rundir._store import load_run


def without_examples(name: str, out: Path) -> Path:
    """A copy of the dataset without its examples.jsonl."""
    copy = out / Path(name).name
    shutil.copytree(resolve_dataset(name), copy)
    (copy / EXAMPLES_FILE).unlink(missing_ok=True)
    return copy


def run(dataset: Path, variants: VariantSet, *, examples: int, limit: int, out: Path) -> dict[str, Any]:
    """Field accuracy, validity and the trivial baseline of the F16 reference."""
    options = RunOptions(limit=limit, out=out, progress=False, token_fidelity=False, examples=examples)
    loaded = load_dataset(dataset, skip_invalid_cases=True)
    summary = load_run(run_evaluation(loaded, variants, options=options)).summary
    entry = summary.variants[0]
    return {
        "field_accuracy": entry.field_accuracy,
        "format_validity": entry.format_validity,
        "baseline_accuracy": entry.baseline_accuracy,
        "cases": summary.dataset.cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=bundled_datasets(), help="names or directories")
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    reference = VariantSet(reference="F16", variants=[v for v in ladder.variants if v.name == "F16"])
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name in args.datasets:
            copy = without_examples(name, root / "data")
            # the zero-shot run scores the same cases: without the ones the other run takes as examples
            chosen = choose_examples(load_dataset(copy, skip_invalid_cases=True), DEFAULT_EXAMPLES)
            same_cases = root / "data" / f"{copy.name}-scored"
            write_dataset(same_cases, schema=chosen.dataset.schema, cases=chosen.dataset.cases, card=name)
            results[name] = {
                "examples_3": run(
                    copy, reference, examples=DEFAULT_EXAMPLES, limit=args.limit, out=root / "runs"
                ),
                "zero_shot": run(same_cases, reference, examples=0, limit=args.limit, out=root / "runs"),
                "example_ids": list(chosen.ids),
            }
            curated = load_dataset(resolve_dataset(name), skip_invalid_cases=True).examples
            if curated:
                with_curated = root / "data" / f"{copy.name}-curated"
                write_dataset(
                    with_curated, schema=chosen.dataset.schema, cases=chosen.dataset.cases,
                    examples=curated, card=name,
                )  # fmt: skip
                results[name]["curated"] = run(
                    with_curated, reference, examples=DEFAULT_EXAMPLES, limit=args.limit, out=root / "runs"
                )
    print(f"F16, {args.limit} cases per dataset, examples.jsonl hidden")
    print(f"{'dataset':22} {'prompt':12} {'accuracy':>9} {'valid':>7} {'baseline':>9}")
    for name, figures in results.items():
        for prompt in ("examples_3", "zero_shot", "curated"):
            if prompt not in figures:
                continue
            f = figures[prompt]
            cells = [f["field_accuracy"], f["format_validity"], f["baseline_accuracy"]]
            shown = ["—" if v is None else f"{v:.1%}" for v in cells]
            print(f"{Path(name).name:22} {prompt:12} {shown[0]:>9} {shown[1]:>7} {shown[2]:>9}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
