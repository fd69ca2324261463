"""Label probabilities (`score_labels`): their cost against the case's own decoding, before and after.

For each ladder variant given, in this one process, on the first N cases of a single-label
classification dataset (banking77 by default), case by case:

1. the answer: `EmbeddedEngine.generate` with one slot (as `--concurrency 1`), wall time;
2. after: `EmbeddedEngine.label_metadata`, all labels in one decode (`label_context`), the
   seconds it reports;
3. before: the previous implementation, each label teacher-forced in turn with `forced_logits`
   on a one-sequence context of `n_ctx` cells over the same file (a second load, with the
   engine's flash-attention setting), its token log-probabilities summed with
   `sequence_logprob`; then once more on an empty KV cache, to see how far the old path's own
   probabilities move with the cache's state alone.

The first case (cold caches: the few-shot prefix is evaluated there) is left out of the sums.
It prints, per variant, the seconds per case of each (means), the overhead (scoring / answer),
the largest difference between the two implementations' probabilities, and that of the old
path against itself on an empty cache.

    python benchmarks/label_scoring.py [--dataset banking77] [--limit 12] [--variants F16 Q4_K_M]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from graphs.long_inputs import prompt_messages
from quantgate.backends import OpenedVariant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Generation
from quantgate.backends.llamacpp._label_scores import (
    LABEL_SCORING_KEY,
    chosen_label,
    closed_label_set,
    common_token_prefix,
    label_continuations,
    label_key,
    normalize_logprobs,
    sequence_logprob,
)
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.llamacpp._teacher_forcing import forced_logits
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import load_variants_file

LADDER = Path.home() / ".cache" / "quantgate" / "ladder" / "variants.toml"


def before(llama: Any, prompt: str, continuations: dict[str, str]) -> dict[str, float]:
    """The previous implementation: each label teacher-forced in turn on one sequence."""
    prompt_tokens = llama.tokenize(prompt.encode("utf-8"))
    tokens = {k: llama.tokenize(v.encode("utf-8"), add_bos=False) for k, v in continuations.items()}
    shared = common_token_prefix(list(tokens.values()))
    shared = min(shared, *(len(t) - 1 for t in tokens.values()))
    head = [*prompt_tokens, *next(iter(tokens.values()))[:shared]]
    logprobs = {}
    for label, label_tokens in tokens.items():
        targets = label_tokens[shared:]
        logprobs[label] = sequence_logprob(forced_logits(llama, head, targets), targets)
    return normalize_logprobs(logprobs)


def measure(model: str, dataset_name: str, limit: int) -> dict[str, Any]:
    """Per-case seconds of the answer, the new scoring and the old one, and their largest gap."""
    from llama_cpp import Llama

    dataset = load_dataset(dataset_name)
    labels = closed_label_set(dataset.schema)
    assert labels is not None, f"{dataset_name} is not a single-label classification"
    engine = EmbeddedEngine(model, slots=1, score_labels=True)
    old = Llama(model, n_ctx=engine.n_ctx, n_threads=engine.n_threads, n_threads_batch=engine.n_threads,
                flash_attn=engine.flash_attn, use_mmap=False, verbose=False)  # fmt: skip
    grammar = engine.grammar(dataset.schema)
    rows: list[tuple[float, float, float, float, float]] = []
    context = case_context(engine, dataset)
    for case in dataset.cases[:limit]:
        prompt = render_prompt(prompt_messages(context, case.text)[0])
        started = time.perf_counter()
        raw = "".join(engine.generate(prompt, grammar, 512, Generation()))
        answer_s = time.perf_counter() - started
        chosen = chosen_label(raw, labels)
        if chosen is None:
            continue
        reported = engine.label_metadata(prompt, raw, dataset.schema)
        started = time.perf_counter()
        previous = before(old, prompt, label_continuations(raw, chosen, labels.labels))
        before_s = time.perf_counter() - started
        gap = max(abs(reported[label_key(k)] - p) for k, p in previous.items())
        old.n_tokens = 0  # the same case again on an empty KV cache: the old path's own spread
        cold = before(old, prompt, label_continuations(raw, chosen, labels.labels))
        spread = max(abs(cold[k] - p) for k, p in previous.items())
        rows.append((answer_s, reported[LABEL_SCORING_KEY], before_s, gap, spread))
    engine.close()
    old.close()
    warm = rows[1:]
    answer, after, previous_s = (sum(r[i] for r in warm) / len(warm) for i in range(3))
    return {
        "cases": len(warm),
        "answer_s": answer,
        "before_s": previous_s,
        "after_s": after,
        "before_overhead": previous_s / answer,
        "after_overhead": after / answer,
        "median_after_overhead": statistics.median(r[1] / r[0] for r in warm),
        "max_gap": max(r[3] for r in warm),
        "max_spread": max(r[4] for r in warm),
    }


def case_context(engine: EmbeddedEngine, dataset: Any) -> Any:
    """The dataset's extraction context (few-shot prefix, token counter) over an open engine."""
    chat = LlamaCppChatModel(engine=engine, json_schema=dict(dataset.schema))
    opened = OpenedVariant(chat_model=chat, runtime={}, context_window=engine.n_ctx,
                           max_output_tokens=512, count_tokens=engine.count_tokens)  # fmt: skip
    return extraction_context(dataset, opened, RunOptions(progress=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="banking77")
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--variants", nargs="+", default=["F16", "Q4_K_M"])
    args = parser.parse_args()
    ladder = {v.name: v.model for v in load_variants_file(LADDER).variants}
    for name in args.variants:
        figures = measure(ladder[name], args.dataset, args.limit)
        print(
            f"{name}: {figures['cases']} cases, answer {figures['answer_s']:.3f} s/case, "
            f"scoring before {figures['before_s']:.3f} s ({figures['before_overhead']:.0%}), "
            f"after {figures['after_s']:.3f} s ({figures['after_overhead']:.0%}; median per case "
            f"{figures['median_after_overhead']:.0%}), largest probability gap {figures['max_gap']:.1e} "
            f"(before against itself on an empty cache: {figures['max_spread']:.1e})"
        )


if __name__ == "__main__":
    main()
