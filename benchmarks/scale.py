"""Harness memory at scale: RSS of `quantgate run` over thousands of cases on a fake model.

The real harness (`run_evaluation`: evaluation graph, extraction graph, scoring, records
streamed to records.jsonl, summary) runs a reference and one more variant over N synthetic
cases (copies of a bundled dataset's cases with unique ids). Both variants are a fake chat
model that answers each case's gold record at once, so the model costs nothing and what
is measured is the harness. Chat-model variants run in this process, so this process's
RSS is the harness's. The fake model reads RSS every `--every` calls.

A short run of `--warmup` cases first imports what the harness imports lazily. Printed:
RSS at the start, before the measured run, after its warm-up (`--warmup` cases of the
first variant), at the end, the growth from warm-up to end against the 50 MB budget
(PASS/FAIL; exit status 1 on FAIL), time per case, and the run directory (deleted unless
`--keep`).

    python benchmarks/scale.py [--cases 5000] [--dataset contacts-events] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import PrivateAttr

from quantgate._hardware import hardware
from quantgate.backends._streaming import MessagesChatModel
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate._memory_sampler import rss_mb
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import RECORDS_FILE

BUDGET_MIB = 50e6 / 2**20
"""The issue's budget, 50 MB (decimal), in MiB: RSS is read in MiB (memory-profiler)."""


class GoldChatModel(MessagesChatModel):
    """Answers the gold record of the source case whose text opens the last message.

    Keeps no per-call state except a counter, and reads RSS every `every` calls.
    """

    answers: list[tuple[str, str]]
    every: int = 500
    warmup: int = 100
    _calls: int = PrivateAttr(default=0)
    _readings: list[tuple[int, float]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "gold-fake"

    @property
    def readings(self) -> list[tuple[int, float]]:
        """(calls so far, RSS MiB) pairs."""
        return self._readings

    def _gold(self, messages: list[BaseMessage]) -> str:
        text = str(messages[-1].content)
        with self._lock:
            self._calls += 1
            if self._calls % self.every == 0 or self._calls == self.warmup:
                self._readings.append((self._calls, rss_mb()))
        return next((answer for prefix, answer in self.answers if text.startswith(prefix)), "{}")

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        answer = self._gold(messages)
        pieces = [answer[i : i + 8] for i in range(0, len(answer), 8)]
        for piece in pieces:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        usage = {"input_tokens": 500, "output_tokens": len(pieces), "total_tokens": 500 + len(pieces)}
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", usage_metadata=usage, chunk_position="last")  # type: ignore[arg-type]
        )


def synthetic_dataset(source: Dataset, n: int, directory: Path) -> Dataset:
    """N cases cycling through the source's cases, each with a unique id and text."""
    cases = (
        Case(
            id=f"{case.id}-{i:05d}",
            text=f"{case.text}\n\nRef. {i:05d}",
            expected=case.expected,
            tags=case.tags,
        )
        for i, case in ((i, source.cases[i % len(source.cases)]) for i in range(n))
    )
    write_dataset(directory, schema=source.schema, cases=cases, examples=source.examples, card="synthetic")
    return load_dataset(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--dataset", default="contacts-events")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    args = parser.parse_args()

    rss_start_mb = rss_mb()
    source = load_dataset(args.dataset)
    answers = [(c.text, json.dumps(c.expected, ensure_ascii=False)) for c in source.cases]
    tmp = Path(tempfile.mkdtemp(prefix="quantgate-scale-"))
    dataset = synthetic_dataset(source, args.cases, tmp / "dataset")
    models = [GoldChatModel(answers=answers, every=args.every, warmup=args.warmup) for _ in range(2)]
    warmup = GoldChatModel(answers=answers, every=args.warmup)
    variants = VariantSet(
        variants=[
            Variant.from_chat_model(name, model) for name, model in zip(("ref", "fake"), models, strict=True)
        ]
    )
    # the warm-up run loads every lazily imported module and fills caches once
    run_evaluation(
        dataset,
        VariantSet(variants=[Variant.from_chat_model("warmup", warmup)]),
        options=RunOptions(limit=args.warmup, out=tmp / "warmup", progress=False, token_fidelity=False),
    )
    before_mb = rss_mb()
    started = time.perf_counter()
    run_dir = run_evaluation(
        dataset, variants, options=RunOptions(out=tmp / "runs", progress=False, token_fidelity=False)
    )
    elapsed = time.perf_counter() - started
    end_mb = rss_mb()
    start_mb = dict(models[0].readings)[args.warmup]
    samples = [
        (f"{m}:{calls}", round(mb, 1))
        for m, model in zip(("ref", "fake"), models, strict=True)
        for calls, mb in model.readings
    ]
    peak_mb = max([end_mb, *(mb for _, mb in samples)])
    with (run_dir / RECORDS_FILE).open(encoding="utf-8") as handle:
        lines = sum(1 for _ in handle)
    growth = end_mb - start_mb
    report = {
        "cases": args.cases,
        "variants": 2,
        "records_written": lines,
        "rss_start_mb": round(rss_start_mb, 1),
        "rss_before_run_mb": round(before_mb, 1),
        "rss_after_warmup_mb": round(start_mb, 1),
        "rss_end_mb": round(end_mb, 1),
        "rss_peak_sampled_mb": round(peak_mb, 1),
        "growth_mb": round(growth, 1),
        "peak_growth_mb": round(peak_mb - start_mb, 1),
        "budget_mb": round(BUDGET_MIB, 1),
        "result": "PASS" if peak_mb - start_mb < BUDGET_MIB else "FAIL",
        "ms_per_case": round(1000 * elapsed / (2 * args.cases), 2),
        "wall_s": round(elapsed, 1),
        "rss_samples_mb": dict(samples),
        "run_dir": str(run_dir),
        "machine": {k: hardware()[k] for k in ("cpu_model", "cpu_cores_logical", "ram_gb")},
    }
    print(json.dumps(report, indent=2))
    if not args.keep:
        shutil.rmtree(tmp)
    return 0 if report["result"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
