"""Build a classification dataset from a subset of PolyAI's banking77 intents.

    python scripts/make_banking77_dataset.py train.csv datasets/banking77 \
        [--labels card_arrival,change_pin,...] [--per-label 30] [--seed 77]
    python scripts/make_banking77_dataset.py train.csv datasets/banking77_all \
        --all-labels --per-label 4 --exclude datasets/banking77

The input is `banking_data/train.csv` of https://github.com/PolyAI-LDN/task-specific-datasets
(CC BY 4.0; columns `text`, `category`). For each chosen intent, `--per-label` rows are drawn
with a fixed seed as cases; its few-shot examples (never scored) are the rows `EXAMPLE_ROWS`
chosen by hand, or else one more row drawn among those of 4 to 14 words. The examples are
written round-robin across the labels, in a seeded label order. Texts are kept as
they are. A case's id is `banking77-train-N`, N the row's number among the CSV's data rows
(from 1, the header not counted). The cases are written round-robin across the labels, in a
seeded order within each, so that any first N cases (`quantgate run --limit N`) are balanced.

`--all-labels` takes every intent of the CSV, in alphabetical order, instead of `--labels`.
`--exclude DIR` leaves out the rows that the dataset in DIR uses as cases or examples (its ids), so
that the new set shares no query with it.

The script writes `cases.jsonl`, `examples.jsonl` and `task.json`; the card (README.md) is written
by hand.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections import defaultdict
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

LABELS = (
    "card_arrival",
    "change_pin",
    "exchange_rate",
    "lost_or_stolen_card",
    "terminate_account",
    "top_up_failed",
    "cash_withdrawal_charge",
    "age_limit",
)
"""The default intents: distinct topics whose names say what they are."""
EXAMPLE_ROWS: dict[str, tuple[int, ...]] = {
    "card_arrival": (18, 43),
    "change_pin": (6884, 6888),
    "exchange_rate": (315, 303),
    "lost_or_stolen_card": (1488, 1493),
    "terminate_account": (6156, 6146),
    "top_up_failed": (8469, 8472),
    "cash_withdrawal_charge": (9340, 9346),
    "age_limit": (1564, 1567),
}
"""Few-shot examples chosen by hand (rows of train.csv): short queries that say their intent
plainly, none among the cases. An intent not listed gets one drawn example."""
SEED = 77
PER_LABEL = 30


def _rows(path: Path) -> dict[str, list[tuple[int, str]]]:
    """The CSV's (row number, text) pairs by intent."""
    by_label: dict[str, list[tuple[int, str]]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=1):
            by_label[row["category"]].append((number, row["text"]))
    return by_label


def _excluded_rows(directory: Path) -> set[int]:
    """The row numbers a dataset made by this script uses, as cases or examples (from their ids)."""
    rows: set[int] = set()
    for name in ("cases.jsonl", "examples.jsonl"):
        path = directory / name
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            case_id = json.loads(line)["id"] if line.strip() else ""
            prefix, _, number = case_id.rpartition("-")
            if prefix == "banking77-train" and number.isdigit():
                rows.add(int(number))
    if not rows:
        raise SystemExit(f"{directory}: no cases.jsonl or examples.jsonl with banking77-train ids to exclude")
    return rows


def _plain(text: str) -> bool:
    """A plain question for an example: 4 to 14 words, no surrounding whitespace."""
    return 4 <= len(text.split()) <= 14 and text == text.strip()


def _case(number: int, text: str, label: str) -> dict[str, Any]:
    return {
        "id": f"banking77-train-{number}",
        "text": text,
        "expected": {"label": label},
        "tags": ["lang:en"],
    }


def build(
    by_label: dict[str, list[tuple[int, str]]], labels: list[str], per_label: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cases and the examples (`EXAMPLE_ROWS`), each round-robin across the labels."""
    rng = random.Random(seed)
    drawn: list[list[dict[str, Any]]] = []
    shots: list[list[dict[str, Any]]] = []
    for label in labels:
        rows = list(by_label[label])
        if len(rows) <= per_label:
            raise SystemExit(f"{label}: {len(rows)} rows, not more than --per-label {per_label}")
        rng.shuffle(rows)
        chosen = set(rows[:per_label])
        if label in EXAMPLE_ROWS:
            texts = dict(by_label[label])
            picked = [
                (n, texts[n]) for n in EXAMPLE_ROWS[label] if n in texts and (n, texts[n]) not in chosen
            ]
        else:
            picked = [row for row in rows[per_label:] if _plain(row[1])][:1]
        picked = picked or rows[per_label : per_label + 1]
        shots.append([_case(number, text, label) for number, text in picked])
        drawn.append([_case(n, t, label) for n, t in rows[:per_label]])
    cases = [case for case in chain.from_iterable(zip_longest(*drawn)) if case is not None]
    rng.shuffle(shots)  # a base model leans to the last example's label: no fixed one last
    examples = [shot for shot in chain.from_iterable(zip_longest(*shots)) if shot is not None]
    return cases, examples


def main() -> None:
    """Read the CSV, write the dataset's files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", type=Path, help="banking_data/train.csv")
    parser.add_argument("out", type=Path, help="the dataset's directory")
    parser.add_argument("--labels", default=",".join(LABELS), help="comma-separated intents")
    parser.add_argument("--all-labels", action="store_true", help="every intent of the CSV (not --labels)")
    parser.add_argument("--exclude", type=Path, help="a dataset directory whose rows are left out")
    parser.add_argument("--per-label", type=int, default=PER_LABEL)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    by_label = _rows(args.csv)
    labels = sorted(by_label) if args.all_labels else args.labels.split(",")
    if args.exclude is not None:
        left_out = _excluded_rows(args.exclude)
        by_label = {label: [r for r in rows if r[0] not in left_out] for label, rows in by_label.items()}
    if unknown := [label for label in labels if label not in by_label]:
        raise SystemExit(f"{args.csv}: no intent {', '.join(unknown)}")
    cases, examples = build(by_label, labels, args.per_label, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, records in (("cases.jsonl", cases), ("examples.jsonl", examples)):
        lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        (args.out / name).write_text("".join(lines), encoding="utf-8")
    task = {"kind": "classification", "labels": labels, "multi_label": False}
    (args.out / "task.json").write_text(json.dumps(task, indent=2) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {len(examples)} examples, {len(labels)} labels -> {args.out}")


if __name__ == "__main__":
    main()
