"""Build the bundled `restaurant-texts` generation dataset from the cleaned E2E NLG test split.

    python scripts/make_restaurant_texts_dataset.py test-fixed.csv datasets/restaurant-texts \
        --exclude devel-fixed.no-ol.csv

The input is `cleaned-data/test-fixed.csv` of https://github.com/tuetschek/e2e-cleaning
(CC BY-SA 4.0). Only the references the cleaning left as they were are read (`fixed` 0: the
cleaning's slot patterns found the text faithful to its MR); a re-annotated reference (`fixed` 1)
often says more than its new MR. Each distinct meaning representation (MR) of at most
`MAX_ATTRIBUTES` attributes becomes one case: its text is the MR as the file gives it
(`name[Blue Spice], eatType[pub]`), its gold text the first of those references the file lists
for it. The test set holds its MRs in pairs that differ only in `eatType` (coffee shop, pub
or restaurant), whose references are near copies of each other (one word swapped); one MR of
each pair is kept, drawn with the seed, so that the cases are independent. MRs equal (as sets
of attributes and values) to one in an `--exclude` CSV are left out. The MRs are put in a
seeded order; the first `EXAMPLES` are the few-shot examples (never scored), the rest the cases.

The script only reads the CSVs and writes `cases.jsonl`, `examples.jsonl` and `task.json`; the
card (README.md) is written by hand.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
from collections import defaultdict
from pathlib import Path

SEED = 34
"""Orders the MRs (and so picks the examples)."""
EXAMPLES = 3
"""Few-shot examples taken out of the MRs (never scored)."""
MAX_ATTRIBUTES = 7
"""Short MRs only: the texts the embedded model writes stay short."""


def _attributes(mr: str) -> frozenset[tuple[str, str]]:
    return frozenset((k.strip(), v) for k, v in re.findall(r"\s*([^,\[]+)\[([^\]]*)\]", mr))


def _one_per_pair(mrs: list[str], rng: random.Random) -> list[str]:
    """One MR of each group of MRs that are equal but for `eatType`, drawn with `rng`."""
    groups: dict[str, list[str]] = defaultdict(list)
    for mr in sorted(mrs):
        groups[re.sub(r"eatType\[[^\]]*\]", "", mr)].append(mr)
    return [rng.choice(group) for _, group in sorted(groups.items())]


def _first_texts(path: Path, *, faithful_only: bool = False) -> dict[str, str]:
    """Each MR's first reference (the first left as it was, with `faithful_only`), in file order,
    whitespace collapsed."""
    first: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if not faithful_only or row["fixed"] == "0":
                first.setdefault(row["mr"], " ".join(row["ref"].split()))
    return first


def _line(case_id: str, mr: str, text: str) -> str:
    line = {"id": case_id, "text": mr, "expected": {"text": text}, "tags": ["lang:en"]}
    return json.dumps(line, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help="cleaned-data/test-fixed.csv of tuetschek/e2e-cleaning")
    parser.add_argument("out", type=Path, help="the dataset directory to write")
    parser.add_argument("--exclude", type=Path, action="append", default=[], help="E2E CSV to keep apart")
    args = parser.parse_args()
    first = _first_texts(args.csv, faithful_only=True)
    excluded = {_attributes(mr) for path in args.exclude for mr in _first_texts(path)}
    rng = random.Random(SEED)
    short = _one_per_pair([mr for mr in first if len(_attributes(mr)) <= MAX_ATTRIBUTES], rng)
    mrs = [mr for mr in short if _attributes(mr) not in excluded]
    rng.shuffle(mrs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "task.json").write_text('{"kind": "generation"}\n', encoding="utf-8")
    examples, cases = mrs[:EXAMPLES], mrs[EXAMPLES:]
    lines = [_line(f"ex-{i:02d}", mr, first[mr]) for i, mr in enumerate(examples)]
    (args.out / "examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = [_line(f"e2e-text-{i:03d}", mr, first[mr]) for i, mr in enumerate(cases)]
    (args.out / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(
        f"{len(first)} MRs with a faithful reference; {len(short)} of at most {MAX_ATTRIBUTES} attributes, "
        "one per eatType pair; "
        f"{len(short) - len(mrs)} excluded; {len(cases)} cases, {len(examples)} examples"
    )


if __name__ == "__main__":
    main()
