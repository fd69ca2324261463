"""Throughput: the embedded backend's tokens/s against raw llama.cpp decode, at 1 and N sequences.

In one process and one sitting, on one model file:

1. raw: llama.cpp's low-level API (`quantgate.backends.batch.LlamaBatchContext`, no
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

It prints a table, then one JSON line with `raw_tps_1`, `raw_tps_n`, `harness_tps_1`,
`harness_tps_n`, `n` and the rest of the figures.

    python benchmarks/throughput.py [--variant Q4_K_M] [--cases 8] [--n 4] [--steps 48]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from graphs.extraction import prompt_messages
from quantgate.backends import EMBEDDED_SLOTS, OpenedVariant
from quantgate.backends.batch import LlamaBatchContext
from quantgate.backends.llamacpp import EmbeddedEngine, LlamaCppChatModel, physical_cores, render_prompt
from quantgate.evaluate.options import RunOptions, extraction_context, select_cases
from quantgate.hardware import hardware
from quantgate.inputs.dataset import Dataset, load_dataset
from quantgate.ladder.build import build_ladder


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


def harness(
    model_path: Path, schema: dict[str, Any], prompts: list[list[BaseMessage]], concurrency: int
) -> dict[str, Any]:
    """The chat model over a slot engine, `concurrency` prompts in flight; outputs and timings."""
    engine = EmbeddedEngine(model_path, slots=concurrency)
    model = LlamaCppChatModel(engine=engine, json_schema=schema)
    decode_s = 0.0
    context: Any = engine._batch_context
    decode = context.decode

    def timed_decode(*args: Any) -> None:
        nonlocal decode_s
        started = time.perf_counter()
        decode(*args)
        decode_s += time.perf_counter() - started

    def one(messages: list[BaseMessage]) -> tuple[str, int]:
        message: Any = None
        for chunk in model.stream(messages):
            message = chunk if message is None else message + chunk
        return str(message.content), int(message.usage_metadata["output_tokens"])

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
    tokens = sum(n for _, n in answers)
    return {
        "outputs": [text for text, _ in answers],
        "tokens": tokens,
        "wall_s": wall,
        "tps": tokens / wall,
        "decode_share": decode_s / wall,
        "prefix_s": prefix_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="contacts-events")
    parser.add_argument("--variant", default="Q4_K_M")
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--n", type=int, default=EMBEDDED_SLOTS, help="sequences at once")
    parser.add_argument("--steps", type=int, default=48, help="raw decode steps")
    args = parser.parse_args()

    ladder, _ = build_ladder(progress=False)
    model_path = Path(next(v.model for v in ladder.variants if v.name == args.variant))
    dataset = load_dataset(args.dataset)
    prompts = first_attempt_prompts(dataset, args.cases)
    tokenizer = EmbeddedEngine(model_path, n_ctx=512)
    prompt_tokens = [tokenizer.llama.tokenize(render_prompt(p).encode("utf-8")) for p in prompts]
    tokenizer.close()
    depth = int(np.mean([len(t) for t in prompt_tokens]))

    raw_1 = raw_decode(model_path, prompt_tokens[0][:depth], 1, args.steps)
    raw_n = raw_decode(model_path, prompt_tokens[0][:depth], args.n, args.steps)
    one = harness(model_path, dataset.schema, prompts, 1)
    many = harness(model_path, dataset.schema, prompts, args.n)
    differ = sum(a != b for a, b in zip(one["outputs"], many["outputs"], strict=True))

    print(f"{args.variant}, {physical_cores()} threads, {len(prompts)} cases of {args.dataset}, "
          f"prompts {depth} tokens deep")  # fmt: skip
    print(f"{'':28} {'1 sequence':>12} {f'{args.n} sequences':>13}")
    print(f"{'raw llama.cpp decode tok/s':28} {raw_1:12.1f} {raw_n:13.1f}")
    print(f"{'harness tok/s':28} {one['tps']:12.1f} {many['tps']:13.1f}")
    print(f"{'harness / raw':28} {one['tps'] / raw_1:12.2f} {many['tps'] / raw_n:13.2f}")
    print(f"{'harness wall s':28} {one['wall_s']:12.1f} {many['wall_s']:13.1f}")
    print(f"{'share of wall in llama_decode':28} {one['decode_share']:12.0%} {many['decode_share']:13.0%}")
    print(f"outputs that differ between 1 and {args.n} sequences: {differ} of {len(prompts)}")
    print(f"prefix read once before timing: {one['prefix_s']:.1f} s")
    figures = {
        "raw_tps_1": round(raw_1, 2),
        "raw_tps_n": round(raw_n, 2),
        "harness_tps_1": round(one["tps"], 2),
        "harness_tps_n": round(many["tps"], 2),
        "n": args.n,
        "cases": len(prompts),
        "depth": depth,
        "outputs_differ": differ,
        "harness_decode_share_1": round(one["decode_share"], 3),
        "harness_decode_share_n": round(many["decode_share"], 3),
        "variant": args.variant,
        "cpu": hardware().get("cpu_model"),
        "threads": physical_cores(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
