"""What token fidelity on every verified case costs: the reference keeping its top-8 log-probabilities
while it decodes, and a candidate comparing each row it reads with them while it verifies.

In one process and one sitting, on the ladder's F16 reference and Q8_0, each opened as a run opens it
(4 slots, the JSON-schema grammar), over the first `--cases` restaurants cases in the run's order, in
chunks of 12 taken in turn, each chunk both ways, the order of the two ways alternating by chunk:

1. the reference decodes the chunk plainly, and keeping its top log-probabilities
   (`TOP_LOGPROBS_KWARG`, as a run does on the cases candidates verify);
2. Q8_0 verifies the reference's answers given as text only, and with their log-probabilities
   (`GivenAnswer.top_logprobs`, as a run does), which it compares with each row it reads.

Case evaluation time of each way is summed; the overhead is (with - without) / without. The cases
whose answers differ between the two ways are counted (the slots' batches differ from pass to pass).
Every timed stretch records the machine's load (`verify.Load`).

    python benchmarks/fidelity_cost.py [--cases 48] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from verify import CHUNK, Load

from graphs.extraction import ExtractionContext, GivenAnswer
from graphs.extraction import graph as extraction_graph
from quantgate._hardware import hardware, package_version
from quantgate.backends import EMBEDDED_SLOTS, TOP_LOGPROBS_KWARG, VERIFY_KWARG, open_variant
from quantgate.evaluate._options import RunOptions, extraction_context, run_cases
from quantgate.inputs._dataset import Case, load_dataset
from quantgate.inputs._variants import Variant
from quantgate.ladder._quantize import build_ladder


def _one(
    context: ExtractionContext, case: Case, given: Any, options: dict[str, Any] | None
) -> list[dict[str, Any]]:
    output = extraction_graph.invoke(
        {"text": case.text, "lang": case.lang, "answers": given, "model_options": options}, context=context
    )
    return list(output.get("attempts") or [])


def _all(
    context: ExtractionContext,
    cases: list[Case],
    given: dict[str, Any] | None,
    options: dict[str, Any] | None,
) -> dict[str, list[dict[str, Any]]]:
    with ThreadPoolExecutor(EMBEDDED_SLOTS) as pool:
        futures = {
            c.id: pool.submit(_one, context, c, given.get(c.id) if given else None, options) for c in cases
        }
        return {case_id: future.result() for case_id, future in futures.items()}


def _both_ways(
    context: ExtractionContext, cases: list[Case], ways: dict[str, tuple[Any, Any]]
) -> tuple[dict[str, Load], dict[str, dict[str, list[dict[str, Any]]]]]:
    """Each chunk each way (given answers, model options), the order alternating by chunk."""
    loads = {name: Load() for name in ways}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in ways}
    names = list(ways)
    for index, start in enumerate(range(0, len(cases), CHUNK)):
        chunk = cases[start : start + CHUNK]
        for name in names if index % 2 == 0 else names[::-1]:
            given, options = ways[name]
            results[name] |= loads[name].measure(lambda c=chunk, g=given, o=options: _all(context, c, g, o))
    return loads, results


def _texts(results: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {case_id: [a.get("text", "") for a in attempts] for case_id, attempts in results.items()}


def _differing(a: dict[str, list[dict[str, Any]]], b: dict[str, list[dict[str, Any]]]) -> int:
    """Cases whose answers differ between two passes (the slots' batches differ from pass to pass, and
    near-ties with them: the runtime's own noise floor, docs/performance.md#verification)."""
    first, second = _texts(a), _texts(b)
    return sum(first[c] != second.get(c) for c in first)


def _overhead(loads: dict[str, Load], plain: str, keeping: str) -> dict[str, Any]:
    base, extra = loads[plain].wall_s, loads[keeping].wall_s
    return {
        plain: loads[plain].figures(),
        keeping: loads[keeping].figures(),
        "overhead": round((extra - base) / base, 4) if base else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=48)
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    by_name: dict[str, Variant] = {v.name: v for v in ladder.variants}
    options = RunOptions(sequential=True, progress=False)
    dataset = load_dataset("restaurants")
    cases = run_cases(dataset.cases, options)[: args.cases]
    with open_variant(by_name["F16"], dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        context = extraction_context(dataset, opened, options)
        _all(context, cases[:1], None, None)  # warm-up: the shared prefix is read once
        keep = {TOP_LOGPROBS_KWARG: True}
        ref_loads, ref = _both_ways(context, cases, {"decoded": (None, None), "keeping": (None, keep)})
    same_reference = _differing(ref["decoded"], ref["keeping"])
    kept = ref["keeping"]
    with_tops = {
        c: [GivenAnswer(text=a["text"], top_logprobs=a["top_logprobs"]) for a in kept[c]] for c in kept
    }
    text_only = {c: [a["text"] for a in kept[c]] for c in kept}
    with open_variant(by_name["Q8_0"], dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        context = extraction_context(dataset, opened, options)
        context.verify_kwarg = VERIFY_KWARG
        _all(context, cases[:1], None, None)
        cand_loads, cand = _both_ways(
            context, cases, {"verified": (text_only, None), "comparing": (with_tops, None)}
        )
    positions = sum(
        len(a["fidelity"]["kld"])
        for attempts in cand["comparing"].values()
        for a in attempts
        if "fidelity" in a
    )
    figures: dict[str, Any] = {
        "llama_cpp_python": package_version("llama-cpp-python"),
        "hardware": hardware(),
        "cases": len(cases),
        "reference": _overhead(ref_loads, "decoded", "keeping") | {"cases_differing": same_reference},
        "candidate": _overhead(cand_loads, "verified", "comparing")
        | {
            "cases_differing": _differing(cand["verified"], cand["comparing"]),
            "positions_compared": positions,
        },
    }
    print(
        f"reference keeping top-8: {figures['reference']['overhead']:+.1%} "
        f"({ref_loads['decoded'].wall_s:.1f} s -> {ref_loads['keeping'].wall_s:.1f} s); "
        f"Q8_0 comparing while verifying: {figures['candidate']['overhead']:+.1%} "
        f"({cand_loads['verified'].wall_s:.1f} s -> {cand_loads['comparing'].wall_s:.1f} s, "
        f"{positions} positions)"
    )
    line = json.dumps(figures, default=str)
    if args.json:
        args.json.write_text(line + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()
