"""Harness overhead: `quantgate run` wall time against raw llama.cpp time for the same generations.

Both are measured in this one process run, one after the other, on the same machine state:

1. quantgate: `run_evaluation` of one ladder variant over N cases (spawned worker process,
   model load, extraction graph, evaluator nodes, records written to disk), wall time.
2. raw: the same model file loaded with llama-cpp-python and the same greedy grammar decoding
   (`EmbeddedEngine.generate` with one slot), called directly on exactly the prompts the graph
   sent (first attempts), wall time including the load; no LangChain, LangGraph, scoring,
   process or disk.

Both at one case at a time (`--concurrency 1`); `benchmarks/throughput.py` measures
several sequences at once against raw llama.cpp decode.

The ratio harness / raw is the overhead; the target is at most 1.10. The outputs are
compared to check that the same generations were timed.

    python benchmarks/overhead.py [--dataset contacts-events] [--limit 8] [--variant Q4_K_M]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from graphs.prompting import build_messages
from quantgate._hardware import hardware
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Generation
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation, select_cases
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.ladder._quantize import build_ladder
from quantgate.rundir._store import read_records


def raw_time(
    model_path: str, schema: dict[str, Any], prompts: list[str], max_tokens: int
) -> tuple[float, list[str]]:
    """Load the model and decode each prompt directly, with nothing of the harness around it."""
    started = time.perf_counter()
    engine = EmbeddedEngine(model_path, slots=1)
    grammar = engine.grammar(schema)
    outputs = ["".join(engine.generate(p, grammar, max_tokens, Generation())) for p in prompts]
    elapsed = time.perf_counter() - started
    engine.close()
    return elapsed, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="contacts-events")
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--variant", default="Q4_K_M")
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    variant = next(v for v in ladder.variants if v.name == args.variant)
    dataset = load_dataset(args.dataset)
    cases = select_cases(dataset.cases, args.limit)

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        run_dir = run_evaluation(
            dataset,
            VariantSet(variants=[variant]),
            options=RunOptions(limit=args.limit, concurrency=1, out=Path(tmp), progress=False),
        )
        harness_s = time.perf_counter() - started
        records = {r.case_id: r for r in read_records(run_dir)}

    examples = [(e.text, e.expected) for e in dataset.examples if e.expected is not None]
    prompts = [
        render_prompt(build_messages(schema=dataset.schema, examples=examples, text=c.text)) for c in cases
    ]
    raw_s, raw_outputs = raw_time(variant.model, dataset.schema, prompts, max_tokens=512)

    first_outputs = [records[c.id].raw for c in cases if records[c.id].attempts == 1]
    same = sum(a == b for a, b in zip(first_outputs, raw_outputs, strict=False))
    repairs = sum(max(records[c.id].attempts - 1, 0) for c in cases)
    tokens = sum(records[c.id].output_tokens or 0 for c in cases)
    report = {
        "dataset": dataset.name,
        "variant": variant.name,
        "cases": len(cases),
        "generated_tokens": tokens,
        "repair_attempts_not_in_raw": repairs,
        "identical_outputs_harness_vs_raw": f"{same}/{len(cases)}",
        "harness_s": round(harness_s, 2),
        "raw_s": round(raw_s, 2),
        "ratio": round(harness_s / raw_s, 3),
        "target": 1.10,
        "machine": {k: hardware()[k] for k in ("cpu_model", "cpu_cores_logical", "ram_gb")},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
