"""Verification against decoding: the same cases decoded and verified, for each candidate of the ladder.

In one process and one sitting, on the ladder's F16 reference and its candidates (Q8_0, Q4_K_M, Q2_K by
default), each opened as a run opens it (4 slots, the JSON-schema grammar), over the first `--cases`
cases of `restaurants` in the run's order, through the extraction graph production runs:

1. the reference decodes every case (its answers, one per model call, are what candidates verify);
2. the noise floor: the reference decodes its first `--noise-cases` again one case at a time (another
   batch composition) and the answers that differ from its 4-slot ones are counted;
3. each candidate, in chunks of 12 cases taken in turn (so a slow stretch of the machine falls on both):
   decodes them (as with `--no-verify`), then verifies the reference's answers (as a run does by
   default). Case evaluation time of each way is summed; the speed-up is decoded / verified.
   Exactness: the answers that differ between the two ways, each with the first differing token's
   position and the candidate's logit margin there (its logits after the prompt and the common prefix,
   one row at a time on a one-sequence engine: logit of the decoded token minus the verified one's);
   and the candidate's own noise floor: its first `--noise-cases` decoded again one case at a time,
   against its 4-slot answers (quantized kernels round differently with the batch's shape).

Every timed stretch records the machine's load: the 1-minute load average and the share of the CPU
other processes took (system busy time minus this process's, over wall time x cores); a stretch where
others took over 10% is flagged.

    python benchmarks/verify.py [--cases 200] [--noise-cases 36] [--candidates Q8_0 Q4_K_M Q2_K] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from graphs.extraction import ExtractionContext
from graphs.extraction import graph as extraction_graph
from graphs.long_inputs import prompt_messages
from quantgate._hardware import hardware, package_version
from quantgate.backends import EMBEDDED_SLOTS, VERIFY_KWARG, open_variant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import common_prefix
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.llamacpp._teacher_forcing import forced_logits
from quantgate.evaluate._options import RunOptions, extraction_context, run_cases
from quantgate.inputs._dataset import Case, load_dataset
from quantgate.inputs._variants import Variant
from quantgate.ladder._quantize import build_ladder

CHUNK = 12
BUSY_SHARE = 0.10
"""Other processes' CPU share above which a timed stretch is flagged as taken on a busy machine."""


@dataclass
class Load:
    """The machine's load over timed stretches: wall time, other processes' CPU time, load averages."""

    wall_s: float = 0.0
    foreign_cpu_s: float = 0.0
    load_averages: list[float] = field(default_factory=list)

    def measure(self, work: Any) -> Any:
        """Run `work()`, adding its wall time and the CPU time other processes took meanwhile."""
        me = psutil.Process()
        system, own = _busy(psutil.cpu_times()), sum(me.cpu_times()[:2])
        started = time.perf_counter()
        result = work()
        wall = time.perf_counter() - started
        foreign = _busy(psutil.cpu_times()) - system - (sum(me.cpu_times()[:2]) - own)
        self.wall_s += wall
        self.foreign_cpu_s += max(foreign, 0.0)
        self.load_averages.append(os.getloadavg()[0])
        return result

    def figures(self) -> dict[str, Any]:
        share = self.foreign_cpu_s / (self.wall_s * (psutil.cpu_count() or 1)) if self.wall_s else None
        return {
            "wall_s": round(self.wall_s, 2),
            "other_cpu_share": None if share is None else round(share, 3),
            "load_average_max": max(self.load_averages) if self.load_averages else None,
            "busy": share is not None and share > BUSY_SHARE,
        }


def _busy(times: Any) -> float:
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


@dataclass(frozen=True)
class Answer:
    """One case's model calls: the text of each, and how each was obtained."""

    texts: tuple[str, ...]
    obtained: tuple[str | None, ...]
    prompt_tokens: int
    """The first call's prompt tokens."""
    output_tokens: int
    """Output tokens over all calls."""


def _answer(context: ExtractionContext, case: Case, given: list[str | None] | None) -> Answer:
    output = extraction_graph.invoke(
        {"text": case.text, "lang": case.lang, "answers": given}, context=context
    )
    attempts = output.get("attempts") or []
    return Answer(
        texts=tuple(a.get("text", "") for a in attempts),
        obtained=tuple(a.get("obtained") for a in attempts),
        prompt_tokens=(attempts[0].get("input_tokens") or 0) if attempts else 0,
        output_tokens=sum(a.get("output_tokens") or 0 for a in attempts),
    )


def answer_all(
    context: ExtractionContext, cases: list[Case], given: dict[str, list[str | None]] | None, concurrency: int
) -> dict[str, Answer]:
    """Every case through the extraction graph, `concurrency` at once (as a run's slots)."""
    with ThreadPoolExecutor(concurrency) as pool:
        futures = {c.id: pool.submit(_answer, context, c, given.get(c.id) if given else None) for c in cases}
        return {case_id: future.result() for case_id, future in futures.items()}


def _margin(engine: EmbeddedEngine, prompt_text: str, ours: str, theirs: str) -> dict[str, Any]:
    """Where two first-attempt answers part, and the candidate's logit margin there (one row at a time)."""
    llama = engine.llama
    a = llama.tokenize(ours.encode(), add_bos=False)
    b = llama.tokenize(theirs.encode(), add_bos=False)
    at = common_prefix(a, b)
    if at >= min(len(a), len(b)):
        return {"position": at, "margin": None, "note": "one answer is a prefix of the other"}
    prompt = llama.tokenize(prompt_text.encode())
    row = forced_logits(llama, prompt, [*a[: at + 1]], rows_per_batch=1)[-1]
    return {"position": at, "margin": float(row[a[at]] - row[b[at]]), "decoded": a[at], "verified": b[at]}


def compare(
    left: dict[str, Answer],
    right: dict[str, Answer],
    engine: EmbeddedEngine | None = None,
    prompts: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The cases whose answers differ, with where (and, given an engine and the first prompts' texts, the
    margin there)."""
    differences = []
    for case_id in left.keys() & right.keys():
        if left[case_id].texts == right[case_id].texts:
            continue
        found: dict[str, Any] = {
            "case": case_id,
            "attempts": [len(left[case_id].texts), len(right[case_id].texts)],
        }
        if engine is not None and prompts and left[case_id].texts and right[case_id].texts:
            found |= _margin(engine, prompts[case_id], left[case_id].texts[0], right[case_id].texts[0])
        differences.append(found)
    return differences


def candidate(
    variant: Variant, cases: list[Case], reference: dict[str, Answer], options: RunOptions, noise_cases: int
) -> dict[str, Any]:
    """Decode and verify every case in alternating chunks; times, how answers were obtained, differences;
    and the candidate's own noise floor: its first `noise_cases` decoded again one at a time."""
    dataset = load_dataset("restaurants")
    given: dict[str, list[str | None]] = {case_id: list(a.texts) for case_id, a in reference.items()}
    decoded: dict[str, Answer] = {}
    verified: dict[str, Answer] = {}
    decode_load, verify_load = Load(), Load()
    with open_variant(variant, dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        context = extraction_context(dataset, opened, options)
        context.verify_kwarg = VERIFY_KWARG
        answer_all(context, cases[:1], None, 1)  # warm-up: the shared prefix is read once
        for start in range(0, len(cases), CHUNK):
            chunk = cases[start : start + CHUNK]
            decoded |= decode_load.measure(lambda c=chunk: answer_all(context, c, None, EMBEDDED_SLOTS))
            verified |= verify_load.measure(lambda c=chunk: answer_all(context, c, given, EMBEDDED_SLOTS))
        noise_load = Load()
        alone = noise_load.measure(lambda: answer_all(context, cases[:noise_cases], None, 1))
        # the prompts' texts while the variant's tokenizer is open (the context counts tokens with it)
        prompts = {c.id: render_prompt(prompt_messages(context, c.text)[0]) for c in cases}
    engine = EmbeddedEngine(variant.model, n_ctx=4096)
    try:
        differences = compare(decoded, verified, engine, prompts)
    finally:
        engine.close()
    how = [o for a in verified.values() for o in a.obtained]
    return {
        "variant": variant.name,
        "cases": len(cases),
        "decoded": decode_load.figures(),
        "verified": verify_load.figures(),
        "speedup": round(decode_load.wall_s / verify_load.wall_s, 2) if verify_load.wall_s else None,
        "obtained": {k: how.count(k) for k in ("verified", "verified_then_decoded", "decoded")},
        "output_tokens": sum(a.output_tokens for a in decoded.values()),
        "prompt_tokens": sum(a.prompt_tokens for a in decoded.values()),
        "same_as_reference_decoded": sum(decoded[c].texts == reference[c].texts for c in decoded),
        "differences": differences,
        "noise": {
            "cases": len(alone),
            "differing": len(compare(decoded, alone)),
            "verified_differing_there": sum(d["case"] in alone for d in differences),
            **noise_load.figures(),
        },
    }


def reference_answers(
    variant: Variant, cases: list[Case], noise_cases: int, options: RunOptions
) -> dict[str, Any]:
    """The reference's answers at 4 slots, and its noise floor: the first `noise_cases` one at a time."""
    dataset = load_dataset("restaurants")
    load, noise_load = Load(), Load()
    with open_variant(variant, dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        context = extraction_context(dataset, opened, options)
        answer_all(context, cases[:1], None, 1)
        answers = load.measure(lambda: answer_all(context, cases, None, EMBEDDED_SLOTS))
        assert isinstance(opened.chat_model, LlamaCppChatModel)
        prefix = _shared_prefix(opened.chat_model.engine, context, cases)
        alone = noise_load.measure(lambda: answer_all(context, cases[:noise_cases], None, 1))
    noise = compare(answers, alone)
    floor = {"cases": len(alone), "differing": len(noise), "cases_differing": [d["case"] for d in noise]}
    return {
        "answers": answers,
        "decoded": load.figures(),
        "noise": floor | noise_load.figures(),
        "shared_prefix_tokens": prefix,
    }


def _shared_prefix(engine: EmbeddedEngine, context: ExtractionContext, cases: list[Case]) -> int:
    """Tokens the first two cases' prompts share (the instructions and examples, read once per variant)."""
    prompts = [render_prompt(prompt_messages(context, c.text)[0]) for c in cases[:2]]
    first, second = (engine.llama.tokenize(p.encode()) for p in prompts)
    return common_prefix(first, second)


def _print_table(reference: dict[str, Any], results: list[dict[str, Any]], cases: int) -> None:
    noise = reference["noise"]
    print(f"reference F16: {cases} cases decoded, {reference['decoded']}")
    print(f"noise floor: {noise['differing']} of {noise['cases']} answers differ decoded one at a time")
    head = (
        "variant",
        "decoded s",
        "verified s",
        "speed-up",
        "verified",
        "then dec.",
        "differ",
        "floor",
        "busy",
    )
    print("{:8} {:>9} {:>10} {:>8} {:>8} {:>9} {:>6} {:>7}  {}".format(*head))
    for r in results:
        how = r["obtained"]
        busy = r["decoded"]["busy"] or r["verified"]["busy"]
        row = (r["variant"], r["decoded"]["wall_s"], r["verified"]["wall_s"], r["speedup"])
        print("{:8} {:9.1f} {:10.1f} {:8.2f}".format(*row), end=" ")
        floor = f"{r['noise']['differing']}/{r['noise']['cases']}"
        counts = (how["verified"], how["verified_then_decoded"], len(r["differences"]), floor, busy)
        print("{:8} {:9} {:6} {:>7}  {}".format(*counts))


def ladder_and_cases(count: int) -> tuple[dict[str, Variant], RunOptions, list[Case]]:
    """The default ladder's variants by name (built if missing), a sequential run's options, and the
    first `count` `restaurants` cases in the run's order."""
    ladder, _ = build_ladder(progress=False)
    options = RunOptions(sequential=True, progress=False)
    cases = run_cases(load_dataset("restaurants").cases, options)[:count]
    return {v.name: v for v in ladder.variants}, options, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--noise-cases", type=int, default=36)
    parser.add_argument("--candidates", nargs="+", default=["Q8_0", "Q4_K_M", "Q2_K"])
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()

    by_name, options, cases = ladder_and_cases(args.cases)
    reference = reference_answers(by_name["F16"], cases, args.noise_cases, options)
    results = [
        candidate(by_name[name], cases, reference["answers"], options, args.noise_cases)
        for name in args.candidates
    ]
    _print_table(reference, results, len(cases))
    figures = {
        "llama_cpp_python": package_version("llama-cpp-python"),
        "hardware": hardware(),
        "reference": {k: v for k, v in reference.items() if k != "answers"},
        "candidates": results,
    }
    line = json.dumps(
        figures, default=lambda value: value.item() if isinstance(value, np.generic) else str(value)
    )
    if args.json:
        args.json.write_text(line + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()
