"""Throughput: the embedded backend's tokens/s against raw llama.cpp decode, at 1 and N sequences.

In one process and one sitting, on one model file:

1. raw: llama.cpp's low-level API (`quantgate.backends.llamacpp._batch.LlamaBatchContext`, no
   scheduler, grammar, LangChain or graph): the first real prompt is read into sequence 0,
   its KV copied into N sequences, and `--steps` greedy argmax steps are decoded in lock-step,
   one batch of N tokens per step, at the prompts' depth (what `llama-batched-bench` measures).
   This is the decode limit of the machine at 1 and at N sequences.
2. harness: the real first-attempt prompts of `--cases` cases through the embedded chat
   model (`LlamaCppChatModel.stream`, JSON-schema grammar, `SlotScheduler`) from 1 and from N
   threads, as `quantgate run --concurrency 1` and `--concurrency N` send them. The shared
   few-shot prefix is read once before timing (a run reads it once per variant); each case's
   own part of the prompt is read inside the timing, as in a run. Tokens/s = output tokens /
   wall time. The time spent inside `llama_decode` is reported, so the harness's own cost
   (scheduling, grammar, LangChain) shows apart from reading the cases' prompts.

The four measurements are taken `--repeat` times in turn (raw 1, harness 1, raw N, harness N,
then again), and each figure is the median of its repeats, so that a slow or fast stretch of a
noisy machine falls on both sides of each ratio. The harness decodes with the run's default
grammar settings unless `--grammar-engine` / `--fast-forward` say otherwise.

It prints a table, then one JSON line with `raw_tps_1`, `raw_tps_n`, `harness_tps_1`,
`harness_tps_n`, `n` and the rest of the figures.

    python benchmarks/throughput.py [--variant Q4_K_M] [--cases 8] [--n 4] [--steps 48] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from graphs.long_inputs import prompt_messages
from quantgate._hardware import hardware, physical_cores
from quantgate.backends import EMBEDDED_SLOTS, OpenedVariant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._schema_grammar import GRAMMAR_ENGINES
from quantgate.backends.llamacpp._batch import LlamaBatchContext
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import common_prefix
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.evaluate._options import RunOptions, extraction_context, select_cases
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.ladder._quantize import build_ladder

_T = TypeVar("_T")


def first_attempt_prompts(dataset: Dataset, cases: int) -> list[list[BaseMessage]]:
    """The messages of each case's first attempt, built as the run builds them."""
    opened = OpenedVariant(chat_model=FakeListChatModel(responses=[""]), context_window=8192)
    context = extraction_context(dataset, opened, RunOptions(progress=False))
    return [prompt_messages(context, case.text)[0] for case in select_cases(dataset.cases, cases)]


def raw_decode(model_path: Path, prompt_tokens: list[int], sequences: int, steps: int) -> float:
    """Aggregate tokens/s of `sequences` greedy sequences decoded in lock-step after the prompt."""
    # its Llama serves only as the loaded model here, with the harness's context settings
    engine = EmbeddedEngine(model_path, n_ctx=512, flash_attn=True)
    context = LlamaBatchContext(engine.llama, sequences=sequences, n_ctx=8192, n_threads=engine.n_threads)
    try:
        depth = len(prompt_tokens)
        for start in range(0, depth, context.n_batch):
            chunk = prompt_tokens[start : start + context.n_batch]
            last = [False] * (len(chunk) - 1) + [start + len(chunk) >= depth]
            context.decode(chunk, range(start, start + len(chunk)), [0] * len(chunk), last)
        for seq in range(1, sequences):
            context.copy_sequence(0, seq)
        tokens = [int(np.argmax(context.logits(len(chunk) - 1)))] * sequences
        started = time.perf_counter()
        for step in range(steps):
            context.decode(tokens, [depth + step] * sequences, range(sequences), [True] * sequences)
            tokens = [int(np.argmax(context.logits(i))) for i in range(sequences)]
        return sequences * steps / (time.perf_counter() - started)
    finally:
        context.close()
        engine.close()


def _read(context: LlamaBatchContext, entries: list[tuple[int, int, int, bool]]) -> dict[int, int]:
    """Decode (token, position, sequence, wants logits) entries in `n_batch` chunks; argmax per sequence."""
    chosen: dict[int, int] = {}
    for start in range(0, len(entries), context.n_batch):
        chunk = entries[start : start + context.n_batch]
        tokens, positions, seqs, wants = (list(column) for column in zip(*chunk, strict=True))
        context.decode(tokens, positions, seqs, wants)
        for index, (_, _, seq, want) in enumerate(chunk):
            if want:
                chosen[seq] = int(np.argmax(context.logits(index)))
    return chosen


def raw_same_work(
    model_path: Path, prompt_tokens: list[list[int]], counts: list[int], sequences: int
) -> float:
    """Tokens/s of raw llama.cpp doing the harness's work: the same prompts, the same output lengths.

    The shared prefix is read once into an extra sequence before timing (as the harness reads it
    once per variant) and shared with each case's sequence; then, timed, the cases go in groups of
    `sequences`: their own prompt parts read in one batch (chunks of `n_batch`), then greedy argmax
    steps in lock-step, each sequence leaving the batch after as many tokens as the harness
    generated for that case. No grammar, scheduler or LangChain: static batching, as
    `llama-batched-bench` does it.
    """
    engine = EmbeddedEngine(model_path, n_ctx=512, flash_attn=True)
    context = LlamaBatchContext(engine.llama, sequences=sequences + 1, n_ctx=8192, n_threads=engine.n_threads)
    try:
        shared = min(common_prefix(prompt_tokens[0], t) for t in prompt_tokens)
        shared = min(shared, min(len(t) for t in prompt_tokens) - 1)
        _read(context, [(t, i, sequences, False) for i, t in enumerate(prompt_tokens[0][:shared])])
        started = time.perf_counter()
        for first in range(0, len(prompt_tokens), sequences):
            group = list(range(first, min(first + sequences, len(prompt_tokens))))
            entries: list[tuple[int, int, int, bool]] = []
            for seq, case in enumerate(group):
                context.copy_sequence(sequences, seq)
                own = prompt_tokens[case][shared:]
                entries += [(t, shared + i, seq, i == len(own) - 1) for i, t in enumerate(own)]
            tokens = _read(context, entries)
            position = {seq: len(prompt_tokens[case]) for seq, case in enumerate(group)}
            left = {seq: counts[case] - 1 for seq, case in enumerate(group)}
            while any(left.values()):
                active = [seq for seq in left if left[seq] > 0]
                tokens = _read(context, [(tokens[s], position[s], s, True) for s in active])
                for seq in active:
                    position[seq] += 1
                    left[seq] -= 1
            for seq in range(len(group)):
                context.remove(seq)
        return sum(counts) / (time.perf_counter() - started)
    finally:
        context.close()
        engine.close()


def harness(
    model_path: Path,
    schema: dict[str, Any],
    prompts: list[list[BaseMessage]],
    concurrency: int,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The chat model over a slot engine, `concurrency` prompts in flight; outputs and timings."""
    engine = EmbeddedEngine(model_path, slots=concurrency, **settings)
    model = LlamaCppChatModel(engine=engine, json_schema=schema)
    decode_s = 0.0
    context: Any = engine._batch_context
    decode = context.decode

    def timed_decode(*args: Any) -> None:
        nonlocal decode_s
        started = time.perf_counter()
        decode(*args)
        decode_s += time.perf_counter() - started

    def one(messages: list[BaseMessage]) -> tuple[str, int, int]:
        message: Any = None
        for chunk in model.stream(messages):
            message = chunk if message is None else message + chunk
        forced = int(message.response_metadata.get("forced_tokens", 0))
        return str(message.content), int(message.usage_metadata["output_tokens"]), forced

    try:
        started = time.perf_counter()
        one(prompts[0])  # reads the shared prefix once, as a run does per variant (not timed below)
        prefix_s = time.perf_counter() - started
        context.decode = timed_decode
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            answers = list(pool.map(one, prompts))
        wall = time.perf_counter() - started
    finally:
        engine.close()
    tokens = sum(n for _, n, _ in answers)
    return {
        "grammar": engine.grammar_engine + (" with fast_forward" if engine.fast_forward else ""),
        "outputs": [text for text, _, _ in answers],
        "counts": [n for _, n, _ in answers],
        "tokens": tokens,
        "forced_tokens": sum(f for _, _, f in answers),
        "wall_s": wall,
        "tps": tokens / wall,
        "decode_share": decode_s / wall,
        "prefix_s": prefix_s,
    }


def _fresh(measurement: Callable[..., _T], *args: Any) -> _T:
    """Take one measurement in a fresh process, as a run evaluates each variant in a worker process.

    In one process, decoding from a second thread after another thread has decoded (here: the
    raw measurement on the main thread, then the slot scheduler's thread) ran at about half
    speed on this machine, both of llama.cpp's OpenMP threads sharing one core; so no
    measurement may inherit another's threads.
    """
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(measurement, *args).result()


def measure(
    model_path: Path, schema: dict[str, Any], prompts: list[list[BaseMessage]], args: argparse.Namespace
) -> tuple[dict[str, list[float]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Raw and harness at 1 and N, `args.repeat` times in turn: raw rates and harness results."""
    settings: dict[str, Any] = {}
    if args.grammar_engine is not None:
        settings["grammar_engine"] = args.grammar_engine
    if args.fast_forward is not None:
        settings["fast_forward"] = args.fast_forward
    tokenizer = EmbeddedEngine(model_path, n_ctx=512)
    prompt_tokens = [tokenizer.llama.tokenize(render_prompt(p).encode("utf-8")) for p in prompts]
    tokenizer.close()
    depth = int(np.mean([len(t) for t in prompt_tokens]))
    raw: dict[str, list[float]] = {"1": [], "n": [], "same_1": [], "same_n": []}
    ones: list[dict[str, Any]] = []
    manys: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        raw["1"].append(_fresh(raw_decode, model_path, prompt_tokens[0][:depth], 1, args.steps))
        ones.append(_fresh(harness, model_path, schema, prompts, 1, settings))
        raw["same_1"].append(_fresh(raw_same_work, model_path, prompt_tokens, ones[-1]["counts"], 1))
        raw["n"].append(_fresh(raw_decode, model_path, prompt_tokens[0][:depth], args.n, args.steps))
        manys.append(_fresh(harness, model_path, schema, prompts, args.n, settings))
        raw["same_n"].append(_fresh(raw_same_work, model_path, prompt_tokens, manys[-1]["counts"], args.n))
    raw["depth"] = [depth]
    return raw, ones, manys


def _median(results: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="contacts-events")
    parser.add_argument("--variant", default="Q4_K_M")
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--n", type=int, default=EMBEDDED_SLOTS, help="sequences at once")
    parser.add_argument("--steps", type=int, default=48, help="raw decode steps")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the four measurements")
    parser.add_argument("--grammar-engine", choices=GRAMMAR_ENGINES, help="default: the run's")
    parser.add_argument("--fast-forward", action=argparse.BooleanOptionalAction, help="default: the run's")
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    model_path = Path(next(v.model for v in ladder.variants if v.name == args.variant))
    dataset = load_dataset(args.dataset)
    prompts = first_attempt_prompts(dataset, args.cases)
    raw, ones, manys = measure(model_path, dataset.schema, prompts, args)
    raw_1, raw_n, depth = statistics.median(raw["1"]), statistics.median(raw["n"]), int(raw["depth"][0])
    one_tps, many_tps = _median(ones, "tps"), _median(manys, "tps")
    same_1, same_n = statistics.median(raw["same_1"]), statistics.median(raw["same_n"])
    differ = sum(a != b for a, b in zip(ones[0]["outputs"], manys[0]["outputs"], strict=True))
    settings = ones[0]["grammar"]

    print(f"{args.variant}, {physical_cores()} threads, {len(prompts)} cases of {args.dataset}, "
          f"prompts {depth} tokens deep, {settings}, median of {args.repeat}")  # fmt: skip
    print(f"{'':28} {'1 sequence':>12} {f'{args.n} sequences':>13}")
    print(f"{'raw llama.cpp decode tok/s':28} {raw_1:12.1f} {raw_n:13.1f}")
    print(f"{'harness tok/s':28} {one_tps:12.1f} {many_tps:13.1f}")
    print(f"{'harness / raw':28} {one_tps / raw_1:12.2f} {many_tps / raw_n:13.2f}")
    print(f"{'raw, same work tok/s':28} {same_1:12.1f} {same_n:13.1f}")
    print(f"{'harness / raw, same work':28} {one_tps / same_1:12.2f} {many_tps / same_n:13.2f}")
    print(f"{'harness wall s':28} {_median(ones, 'wall_s'):12.1f} {_median(manys, 'wall_s'):13.1f}")
    print(f"{'share of wall in llama_decode':28} {_median(ones, 'decode_share'):12.0%} "
          f"{_median(manys, 'decode_share'):13.0%}")  # fmt: skip
    print(f"{'forced tokens (fast-forward)':28} {ones[0]['forced_tokens']:12} {manys[0]['forced_tokens']:13}")
    print(f"outputs that differ between 1 and {args.n} sequences: {differ} of {len(prompts)}")
    rates = {key: [round(x, 1) for x in raw[key]] for key in ("1", "n", "same_1", "same_n")}
    print(f"raw tok/s per repeat: 1: {rates['1']}, {args.n}: {rates['n']}; "
          f"same work 1: {rates['same_1']}, {args.n}: {rates['same_n']}")  # fmt: skip
    print(f"harness tok/s per repeat: 1: {[round(r['tps'], 1) for r in ones]}, "
          f"{args.n}: {[round(r['tps'], 1) for r in manys]}")  # fmt: skip
    figures = {
        "raw_tps_1": round(raw_1, 2),
        "raw_tps_n": round(raw_n, 2),
        "harness_tps_1": round(one_tps, 2),
        "harness_tps_n": round(many_tps, 2),
        "raw_same_work_tps_1": round(same_1, 2),
        "raw_same_work_tps_n": round(same_n, 2),
        "n": args.n,
        "cases": len(prompts),
        "depth": depth,
        "repeat": args.repeat,
        "grammar": settings,
        "outputs_differ": differ,
        "output_tokens": ones[0]["tokens"],
        "forced_tokens": ones[0]["forced_tokens"],
        "harness_decode_share_1": round(_median(ones, "decode_share"), 3),
        "harness_decode_share_n": round(_median(manys, "decode_share"), 3),
        "variant": args.variant,
        "cpu": hardware().get("cpu_model"),
        "threads": physical_cores(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
