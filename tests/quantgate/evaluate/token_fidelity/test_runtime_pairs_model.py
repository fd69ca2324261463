"""A runtime pair on the real model: the ladder's Q4_K_M embedded (the base, loaded here) and the
same file behind llama-cpp-python's real OpenAI-compatible server (`llama_server`, a variant with
api = "completions"), compared along the base's outputs by `measure_pairs`, the worker's own code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphs.long_inputs import prompt_messages
from quantgate.backends import open_variant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.token_fidelity._job import FidelityJob
from quantgate.evaluate.token_fidelity._pair_fidelity import measure_pairs
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import read_fidelity

pytestmark = pytest.mark.model

SCHEMA = {"type": "object", "properties": {"name": {"type": ["string", "null"]}}, "required": ["name"]}
TEXTS = {
    "a": "The Wrestlers is a cheap pub in the city centre.",
    "b": "Browns Cambridge serves Chinese food.",
}
NAMES = {"a": "The Wrestlers", "b": "Browns Cambridge"}


def _greedy(llama: Any, prompt: str) -> str:
    answer = llama.create_completion(prompt, max_tokens=10, temperature=0.0, repeat_penalty=1.0)
    return str(answer["choices"][0]["text"])


def greedy_outputs(base: Variant, dataset: Dataset) -> dict[str, str]:
    """The base's free greedy answer per case (10 tokens): the server's greedy walk then follows it
    in one request per case, so the test stays short (each request costs the server a few seconds)."""
    with open_variant(base, dataset.schema) as opened:
        context = extraction_context(dataset, opened, RunOptions(max_repairs=0, progress=False))
        assert isinstance(opened.chat_model, LlamaCppChatModel)
        llama = opened.chat_model.engine.llama
        prompts = {c.id: render_prompt(prompt_messages(context, c.text)[0]) for c in dataset.cases}
        return {case: _greedy(llama, prompt) for case, prompt in prompts.items()}


def test_the_same_file_embedded_and_behind_a_server_gives_the_same_top_k_lists(
    ladder: VariantSet, llama_server, tmp_path: Path
) -> None:
    directory = tmp_path / "names"
    directory.mkdir()
    (directory / "schema.json").write_text(json.dumps(SCHEMA))
    cases = [{"id": case, "text": text, "expected": {"name": NAMES[case]}} for case, text in TEXTS.items()]
    (directory / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    dataset = load_dataset(directory)
    base = next(v for v in ladder.variants if v.name == "Q4_K_M")
    served = Variant(
        name="Q4_K_M-server",
        backend="openai",
        model=llama_server.model,
        options={"base_url": llama_server.url, "api": "completions", "timeout_s": 600},
    )
    outputs = greedy_outputs(base, dataset)
    job = FidelityJob(reference=base, variants=(served,), dataset=dataset, cases=tuple(dataset.cases),
                  outputs=outputs, run_dir=tmp_path, max_repairs=0, progress=False)  # fmt: skip
    entry = measure_pairs(job)["Q4_K_M-server"]
    lines = list(read_fidelity(tmp_path))
    print(
        f"same file, two runtimes: KLD mean {entry.kld_mean} max {entry.kld_max} top-1 {entry.top1_agreement}"
    )
    assert [(line.variant, line.base, line.case_id) for line in lines] == [
        ("Q4_K_M-server", "Q4_K_M", "a"),
        ("Q4_K_M-server", "Q4_K_M", "b"),
    ]
    assert entry.positions == sum(line.positions or 0 for line in lines) >= 10
    # same weights, same prompt text, both decoded one token at a time: the server's greedy
    # generation never leaves the base's output (one request per case: every token it generated
    # is the base's, spelled alike), and its top-20 lists are the embedded ones
    assert [line.requests for line in lines] == [1, 1]
    assert entry.top1_agreement == 1.0
    assert entry.kld_max is not None
    # 7.5e-12 on a fresh server; 1.5e-3 after the other server tests (CI's order, reproduced): the
    # server reuses the previous prompt's evaluated prefix, so the prompt is split into other
    # batches, and llama.cpp is not batch-invariant (~1e-3, docs/token-fidelity.md)
    assert entry.kld_max < 1e-2
    assert entry.method.startswith("the same model file on two runtimes, a top-20 lower bound")
