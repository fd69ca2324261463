"""Drafts from the prompt against plain decoding: the same cases decoded both ways, per variant.

In one process and one sitting, each variant of the ladder (the F16 reference by default, whose
answers a run decodes this way for the candidates to verify) is opened as a run opens it (4 slots,
the JSON-schema grammar) and decodes the first `--cases` cases of `restaurants` in the run's order,
through the extraction graph, in chunks of 12 taken in turn: plainly (token by token, as the latency
sample and `--no-verify` decode), and drafting from text already seen (`LOOKUP_KWARG`,
`quantgate.backends.llamacpp._lookup`). The order of the two ways alternates from chunk to chunk, so
a slow stretch of the machine falls on both. It reports each way's case evaluation time and the
speed-up, the drafted tokens and those kept, and the answers that differ between the two ways (each
a place where llama.cpp's batch-shape rounding moved a near-tie: see `benchmarks/verify.py`, whose
noise floor is the yardstick). Every timed stretch records the machine's load, as `verify.py` does.

    python benchmarks/lookup.py [--cases 96] [--variants F16] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # verify.py beside this file

from verify import CHUNK, Load, ladder_and_cases

from graphs.extraction import ExtractionContext, ExtractionInput
from graphs.extraction import graph as extraction_graph
from quantgate._hardware import hardware, package_version
from quantgate.backends import EMBEDDED_SLOTS, LOOKUP_KWARG, open_variant
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.inputs._dataset import Case, load_dataset
from quantgate.inputs._variants import Variant


def _answer(context: ExtractionContext, case: Case, lookup: bool) -> dict[str, Any]:
    state = ExtractionInput(
        text=case.text, lang=case.lang, model_options={LOOKUP_KWARG: True} if lookup else {}
    )
    attempts = extraction_graph.invoke(state, context=context).get("attempts") or []
    reported = [a.get("reported") or {} for a in attempts]
    return {
        "texts": [a.get("text", "") for a in attempts],
        "output_tokens": sum(a.get("output_tokens") or 0 for a in attempts),
        "drafted": sum(r.get("lookup_drafted", 0) for r in reported),
        "kept": sum(r.get("lookup_kept", 0) for r in reported),
    }


def answer_all(context: ExtractionContext, cases: list[Case], lookup: bool) -> dict[str, dict[str, Any]]:
    """Every case through the extraction graph, as many at once as the variant has slots."""
    with ThreadPoolExecutor(EMBEDDED_SLOTS) as pool:
        futures = {c.id: pool.submit(_answer, context, c, lookup) for c in cases}
        return {case_id: future.result() for case_id, future in futures.items()}


def measure(variant: Variant, cases: list[Case], options: RunOptions) -> dict[str, Any]:
    """Decode every case plainly and with drafts, chunk by chunk, the order alternating."""
    dataset = load_dataset("restaurants")
    answers: dict[bool, dict[str, dict[str, Any]]] = {False: {}, True: {}}
    loads = {False: Load(), True: Load()}
    with open_variant(variant, dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        context = extraction_context(dataset, opened, options)
        answer_all(context, cases[:1], False)  # warm-up: the shared prefix is read once
        for index, start in enumerate(range(0, len(cases), CHUNK)):
            chunk = cases[start : start + CHUNK]
            for lookup in (False, True) if index % 2 == 0 else (True, False):
                answers[lookup] |= loads[lookup].measure(lambda c=chunk, w=lookup: answer_all(context, c, w))
    plain, drafted = answers[False], answers[True]
    differing = sorted(c for c in plain if plain[c]["texts"] != drafted[c]["texts"])
    kept = sum(a["kept"] for a in drafted.values())
    return {
        "variant": variant.name,
        "cases": len(cases),
        "plain": loads[False].figures(),
        "lookup": loads[True].figures(),
        "speedup": round(loads[False].wall_s / loads[True].wall_s, 2) if loads[True].wall_s else None,
        "output_tokens": sum(a["output_tokens"] for a in drafted.values()),
        "drafted_tokens": sum(a["drafted"] for a in drafted.values()),
        "kept_tokens": kept,
        "differing": len(differing),
        "cases_differing": differing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=96)
    parser.add_argument("--variants", nargs="+", default=["F16"])
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()

    by_name, options, cases = ladder_and_cases(args.cases)
    results = [measure(by_name[name], cases, options) for name in args.variants]
    print(f"{'variant':8} {'cases':>5} {'plain s':>8} {'lookup s':>9} {'speed-up':>8} {'kept/drafted':>14} "
          f"{'of output':>9} {'differ':>6} {'busy':>5}")  # fmt: skip
    for r in results:
        busy = r["plain"]["busy"] or r["lookup"]["busy"]
        print(
            f"{r['variant']:8} {r['cases']:5} {r['plain']['wall_s']:8.1f} {r['lookup']['wall_s']:9.1f} "
            f"{r['speedup']:7.2f}x {r['kept_tokens']:6}/{r['drafted_tokens']:<7} "
            f"{r['kept_tokens'] / max(r['output_tokens'], 1):9.0%} {r['differing']:6} "
            f"{'yes' if busy else 'no':>5}"
        )
    line = json.dumps({
        "llama_cpp_python": package_version("llama-cpp-python"), "hardware": hardware(), "variants": results,
    })  # fmt: skip
    if args.json:
        args.json.write_text(line + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()
