"""Build the bundled `tool-calls` dataset from the Berkeley Function Calling Leaderboard (BFCL).

    python scripts/make_tool_calls_dataset.py GORILLA/berkeley-function-call-leaderboard/bfcl_eval/data \
        datasets/tool-calls

The input is BFCL's data directory (https://github.com/ShishirPatil/gorilla, Apache-2.0). A quantgate
tool-calling dataset has one tools list, so the script takes a pool of `POOL` functions of BFCL's
live categories (a travel and leisure assistant: weather, events, movies, music, attractions,
hotels, payments, buses, rental cars, restaurants, flights), each in the definition most of its
single-turn cases use, and keeps the live_simple and live_multiple cases that call one of them,
asked in one user message, whose own definition of the function is that one (so the gold was
written against the very tool the model sees): at most `PER_TOOL` per function, drawn with `SEED`.
Irrelevance cases (gold: no call) are BFCL_v4_irrelevance questions that none of the pool's tools
fits: those that mention the pool's topics (`_POOL_TOPICS`) or were found to fit on reading
(`_FITTING`) are left out, `IRRELEVANT` of the rest are drawn with `SEED`.

Conversion: BFCL's functions become tools as `quantgate datasets import bfcl` converts them
(`quantgate.inputs._bfcl.tool_of`: BFCL's parameter types in JSON Schema's words, the parameters
object closed with `additionalProperties: false`), and BFCL's possible answers, which list the accepted values
of each argument, give their first value (a first value "" means the argument is left out).
Every gold call is checked against its tool's parameters before anything is written. The script
writes `task.json`, `cases.jsonl` and `examples.jsonl`; the card (README.md) is written by hand.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from quantgate.inputs._bfcl import tool_of

POOL = (
    "Weather_1_GetWeather",
    "Events_3_FindEvents",
    "Movies_3_FindMovies",
    "Music_3_LookupMusic",
    "Travel_1_FindAttractions",
    "Hotels_4_SearchHotel",
    "Payment_1_MakePayment",
    "Buses_3_FindBus",
    "RentalCars_3_GetCarsAvailable",
    "Restaurants_2_FindRestaurants",
    "Flights_4_SearchOnewayFlight",
)
PER_TOOL = 10
"""Cases kept per function at most."""
IRRELEVANT = 35
"""Irrelevance cases kept."""
EXAMPLE_TOOLS = ("Weather_1_GetWeather", "Payment_1_MakePayment")
"""One case of each becomes a few-shot example, after one irrelevance case; never scored."""
SEED = 34

_POOL_TOPICS = re.compile(
    r"weather|forecast|rain|temperature|movie|film|cinema|music|song|album|artist|band|concert|event"
    r"|theat|play\b|show|hotel|accommodation|stay|room|pay|money|send|transfer|bus\b|buses|car\b|cars"
    r"|rent|restaurant|food|eat|dinner|lunch|cuisine|flight|fly|airport|airline|attraction|museum"
    r"|park|visit|travel|trip|tour|ticket|book",
    re.IGNORECASE,
)
_FITTING = frozenset(
    {"irrelevance_114", "irrelevance_210", "irrelevance_213", "irrelevance_223", "irrelevance_236"}
)
"""Irrelevance cases a pool tool fits after all, found on reading the drawn ones."""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def first_answer(arguments: dict[str, list[Any]]) -> dict[str, Any]:
    """Each argument's first accepted value; a first value "" leaves the argument out."""
    return {name: values[0] for name, values in arguments.items() if values and values[0] != ""}


def _question(case: dict[str, Any]) -> str | None:
    turns = case["question"]
    if len(turns) != 1 or [m["role"] for m in turns[0]] != ["user"]:
        return None
    return str(turns[0][0]["content"]).strip() or None


def _gold_calls(data: Path) -> list[tuple[str, str, dict[str, Any], str, str, dict[str, Any]]]:
    """(function, its definition as sorted JSON, gold call, question, `category:id`, the definition)
    of every single-turn live case whose one gold call is to a pool function."""
    found = []
    for category in ("simple", "multiple"):
        answers = {
            a["id"]: a["ground_truth"]
            for a in _jsonl(data / "possible_answer" / f"BFCL_v4_live_{category}.json")
        }
        for case in _jsonl(data / f"BFCL_v4_live_{category}.json"):
            truth, question = answers[case["id"]], _question(case)
            if len(truth) != 1 or question is None or next(iter(truth[0])) not in POOL:
                continue
            ((name, arguments),) = truth[0].items()
            definition = next(f for f in case["function"] if f["name"] == name)
            call = {"name": name, "arguments": first_answer(arguments)}
            source = f"{category}:{case['id']}"
            found.append((name, json.dumps(definition, sort_keys=True), call, question, source, definition))
    return found


def _case(case_id: str, text: str, call: dict[str, Any] | None, category: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "text": text,
        "expected": {"call": call},
        "tags": ["lang:en", f"category:{category}"],
    }


def _check(case: dict[str, Any], tools: dict[str, dict[str, Any]]) -> bool:
    call = case["expected"]["call"]
    return call is None or Draft202012Validator(tools[call["name"]]).is_valid(call["arguments"])


def build(data: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The tools, the cases and the examples."""
    rng = random.Random(SEED)
    calls = _gold_calls(data)
    canonical = {name: Counter(d for n, d, *_ in calls if n == name).most_common(1)[0][0] for name in POOL}
    # the first case's definition as BFCL wrote it (the sorted JSON lost the order of the properties)
    written = {d: definition for _, d, *_, definition in reversed(calls)}
    tools = [tool_of(written[canonical[name]]) for name in POOL]
    parameters = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    cases, examples, seen = [], [], set()
    for name in POOL:
        own = [
            (call, text, source)
            for n, d, call, text, source, _ in calls
            if n == name and d == canonical[name]
        ]
        rng.shuffle(own)
        kept = []
        for call, text, source in own:
            category, case_id = source.split(":", 1)
            case = _case(case_id, text, call, category)
            if text not in seen and _check(case, parameters):
                seen.add(text)
                kept.append(case)
        if name in EXAMPLE_TOOLS:
            examples.append(kept.pop())
        cases.extend(kept[:PER_TOOL])
    irrelevant = [
        _case(c["id"], question, None, "irrelevance")
        for c in _jsonl(data / "BFCL_v4_irrelevance.json")
        if (question := _question(c)) is not None
        and not _POOL_TOPICS.search(question)
        and c["id"] not in _FITTING
    ]
    rng.shuffle(irrelevant)
    examples.insert(0, irrelevant.pop())  # first: a base model leans to the last example's answer
    cases.extend(irrelevant[:IRRELEVANT])
    rng.shuffle(cases)  # tools and categories mixed, so that the first cases (`--limit N`) are too
    return tools, cases, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="BFCL's bfcl_eval/data directory")
    parser.add_argument("out", type=Path, help="the dataset directory to write")
    args = parser.parse_args()
    tools, cases, examples = build(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    task = {"kind": "tool_calling", "tools": tools}
    (args.out / "task.json").write_text(
        json.dumps(task, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    for file, rows in (("cases.jsonl", cases), ("examples.jsonl", examples)):
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (args.out / file).write_text(lines, encoding="utf-8")
    counts = Counter(tag for case in cases for tag in case["tags"] if tag.startswith("category:"))
    print(f"{len(tools)} tools, {len(cases)} cases ({dict(counts)}), {len(examples)} examples")


if __name__ == "__main__":
    main()
