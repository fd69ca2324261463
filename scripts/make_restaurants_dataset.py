"""Build the bundled `restaurants` dataset from the cleaned E2E NLG development split.

    python scripts/make_restaurants_dataset.py devel-fixed.no-ol.csv datasets/restaurants \
        [--exclude ../shared/data/e2e-restaurants-dev/cases.jsonl]

The input is `cleaned-data/devel-fixed.no-ol.csv` of https://github.com/tuetschek/e2e-cleaning
(CC BY-SA 4.0). Each distinct meaning representation (MR) becomes one case: one of its human
texts, drawn with a fixed seed, so that no two cases share an MR and the cases are independent.
The MR is the gold record. MRs whose record equals one in the `--exclude` files (another
development set) are left out, and so are the few MRs used as few-shot examples (the first ones,
in a seeded order, that together show every field given and every field but the name null).

The script only reads the CSV and writes `cases.jsonl`, `examples.jsonl` and `schema.json`; the
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
from typing import Any

SEED = 31
"""Draws each MR's text and the order of the cases."""
EXAMPLES = 3
"""Few-shot examples taken out of the MRs (never scored)."""

_KEYS = {
    "name": "name",
    "eatType": "eat_type",
    "food": "food",
    "priceRange": "price_range",
    "customer rating": "customer_rating",
    "area": "area",
    "familyFriendly": "family_friendly",
    "near": "near",
}

SCHEMA: dict[str, Any] = {
    "title": "Restaurant",
    "type": "object",
    "properties": {
        "name": {"type": ["string", "null"], "description": "The name of the place described"},
        "eat_type": {
            "type": ["string", "null"],
            "description": "What kind of place it is: pub, restaurant or coffee shop; null if not said",
        },
        "food": {
            "type": ["string", "null"],
            "description": "The kind of food it serves, e.g. English, Chinese, Italian, fast food; "
            "null if not said",
        },
        "price_range": {
            "type": ["string", "null"],
            "description": "Its prices as one of: cheap, moderate, high, less than £20, £20-25, "
            "more than £30; null if not said",
        },
        "customer_rating": {
            "type": ["string", "null"],
            "description": "Its customer rating as one of: low, average, high, 1 out of 5, 3 out of 5, "
            "5 out of 5; null if not said",
        },
        "area": {
            "type": ["string", "null"],
            "description": "Where it is: city centre or riverside; null if not said",
        },
        "family_friendly": {
            "type": ["boolean", "null"],
            "description": "true if it is family or child friendly, false if it is not; null if not said",
        },
        "near": {
            "type": ["string", "null"],
            "description": "The name of the landmark or place it is near; null if not said",
        },
    },
    "required": list(_KEYS.values()),
}


def mr_record(mr: str) -> dict[str, Any]:
    """The gold record of an E2E meaning representation such as `name[Aromi], area[riverside]`."""
    record: dict[str, Any] = dict.fromkeys(_KEYS.values())
    for key, value in re.findall(r"\s*([^,\[]+)\[([^\]]*)\]", mr):
        field = _KEYS[key.strip()]
        record[field] = {"yes": True, "no": False}[value] if field == "family_friendly" else value
    return record


def _texts_by_mr(path: Path) -> dict[str, list[str]]:
    by_mr: dict[str, list[str]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            by_mr[row["mr"]].append(" ".join(row["ref"].split()))
    return by_mr


def _excluded(paths: list[Path]) -> list[dict[str, Any]]:
    found = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.append(json.loads(line)["expected"])
    return found


def _pick_examples(mrs: list[str]) -> list[str]:
    """The first MRs that together show every field given, and every field but the name null."""
    chosen: list[str] = []
    given: set[str] = set()
    null: set[str] = set()
    for mr in mrs:
        record = mr_record(mr)
        if record["name"] is None:  # a few cleaned MRs dropped a name the text gives: no example
            continue
        new_given = {k for k, v in record.items() if v is not None} - given
        new_null = {k for k, v in record.items() if v is None} - null
        if new_given or new_null or len(chosen) < EXAMPLES:
            chosen.append(mr)
            given |= new_given
            null |= new_null
        if len(chosen) >= EXAMPLES and len(given) == len(_KEYS) and len(null) == len(_KEYS) - 1:
            break
    return chosen


def _line(case_id: str, text: str, record: dict[str, Any]) -> str:
    line = {"id": case_id, "text": text, "expected": record, "tags": ["lang:en"]}
    return json.dumps(line, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help="cleaned-data/devel-fixed.no-ol.csv of tuetschek/e2e-cleaning")
    parser.add_argument("out", type=Path, help="the dataset directory to write")
    parser.add_argument("--exclude", type=Path, action="append", default=[], help="cases.jsonl to keep apart")
    args = parser.parse_args()
    rng = random.Random(SEED)
    by_mr = _texts_by_mr(args.csv)
    excluded = _excluded(args.exclude)
    mrs = [mr for mr in sorted(by_mr) if mr_record(mr) not in excluded]
    rng.shuffle(mrs)
    examples = _pick_examples(mrs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "schema.json").write_text(json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n", "utf-8")
    lines = [_line(f"ex-{i:02d}", rng.choice(by_mr[mr]), mr_record(mr)) for i, mr in enumerate(examples)]
    (args.out / "examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cases = [mr for mr in mrs if mr not in examples]
    lines = [_line(f"e2e-{i:04d}", rng.choice(by_mr[mr]), mr_record(mr)) for i, mr in enumerate(cases)]
    (args.out / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {len(examples)} examples; {len(by_mr) - len(mrs)} MRs excluded")


if __name__ == "__main__":
    main()
