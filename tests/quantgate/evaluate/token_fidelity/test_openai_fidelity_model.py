"""Token fidelity of `openai:` variants on llama-cpp-python's real server (the session's Q4_K_M):
a reference and a variant with `api = "completions"` are measured; under the chat API (the
server's own template, and no `/apply-template`) they are not, with the reason."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from quantgate.backends import BackendError
from quantgate.evaluate.token_fidelity._job import FidelityJob
from quantgate.evaluate.token_fidelity._run_step import measure_logprobs
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import FIDELITY_FILE
from quantgate.rundir._summary import TokenFidelityEntry

pytestmark = pytest.mark.model


def served(name: str, url: str, api: str) -> Variant:
    options = {"base_url": url, "api": api, "top_logprobs": 10, "timeout_s": 600}
    return Variant(name=name, backend="openai", model="q4_k_m", options=options)


def test_completions_variants_on_a_real_server_are_measured_and_chat_ones_are_not(
    llama_server, dataset: Dataset, tmp_path: Path
):
    # the tiny invoice set: llama_cpp.server takes the log-softmax of every prompt position of a
    # logprobs request in Python, about 30 s per request with a restaurants prompt (875 tokens)
    cases = tuple(dataset.cases[:1])
    # targets: each case's expected first field as a JSON object (any text the reference is forced
    # along will do; short, since llama_cpp.server sorts the whole vocabulary per position)
    outputs = {c.id: json.dumps(dict(list((c.expected or {}).items())[:1])) for c in cases}
    reference = served("ref", llama_server.url, "completions")
    variant = served("same-file", llama_server.url, "completions")
    job = FidelityJob(reference=reference, variants=(variant,), dataset=dataset, cases=cases,
                      outputs=outputs, run_dir=tmp_path, max_repairs=0, progress=False)  # fmt: skip
    [(name, entry)] = measure_logprobs(job).items()
    assert name == "same-file"
    assert isinstance(entry, TokenFidelityEntry)
    assert entry.method.startswith("top-10 log-probabilities from an OpenAI-compatible server")
    lines = [json.loads(line) for line in (tmp_path / FIDELITY_FILE).read_text().splitlines()]
    assert [(line["case_id"], line["error"], line["unobserved"]) for line in lines] == [
        (c.id, None, 0) for c in cases
    ]
    # the same model on the same server follows the same target: the same top-1, lists within noise
    assert entry.positions == sum(line["positions"] for line in lines) >= 4
    assert entry.kld_mean is not None
    assert entry.kld_mean < 1e-3  # 3.5e-5 measured: resumed requests split the batches differently
    assert entry.top1_agreement == 1.0

    # the chat API: the server's template makes the prompt, and llama_cpp.server has no /apply-template
    chat = replace(
        job,
        reference=served("ref", llama_server.url, "chat"),
        variants=(served("v", llama_server.url, "chat"),),
    )
    with pytest.raises(
        BackendError, match=r'the reference: the server\'s prompt text is unknown.*api = "completions"'
    ):
        measure_logprobs(chat)
