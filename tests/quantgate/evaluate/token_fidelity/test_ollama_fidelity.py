"""Token fidelity from Ollama's top-k logprobs, through the Ollama-protocol TEST DOUBLE (real
llama.cpp inference), checked against the full-logit measurement of the embedded backend."""

from typing import Any

import pytest

from graphs.long_inputs import prompt_messages
from quantgate.backends import open_variant
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.ollama._ollama_forcing import OllamaForcing
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.token_fidelity._measurement import (
    case_prompt,
    measure_ollama_token_fidelity,
    measure_token_fidelity,
)
from quantgate.inputs._dataset import load_dataset
from tests.conftest import OLLAMA_TAGS

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def cases(ladder):
    """Two cases: first-attempt messages and prompts, and F16's own constrained outputs."""
    dataset = load_dataset("tech-config")
    reference = next(v for v in ladder.variants if v.name == "F16")
    with open_variant(reference, dataset.schema) as opened:
        context = extraction_context(dataset, opened, RunOptions(progress=False))
        chosen = dataset.cases[:2]
        messages = {c.id: prompt_messages(context, c.text)[0] for c in chosen}
        assert isinstance(opened.chat_model, LlamaCppChatModel)
        outputs = {c.id: opened.chat_model.invoke(messages[c.id]).text for c in chosen}
        prompts = {c.id: case_prompt(context, c.text) for c in chosen}
        embedded: list[dict[str, Any]] = []
        q4 = next(v.model for v in ladder.variants if v.name == "Q4_K_M")
        summary = measure_token_fidelity(
            reference=opened.chat_model.engine,
            variant_paths={"Q4_K_M": q4},
            prompts=prompts,
            reference_outputs=outputs,
            engine_options={"n_ctx": 8192},
            on_case=embedded.append,
        )
    return {"messages": messages, "outputs": outputs, "embedded": summary["Q4_K_M"], "records": embedded}


def forcing(server, name):
    return OllamaForcing(host=server.url, model=OLLAMA_TAGS[name], options={"num_ctx": 8192, "seed": 0})


def test_ollama_fidelity_agrees_with_the_full_logit_measurement(ollama_double, cases):
    records: list[dict[str, Any]] = []
    summaries = measure_ollama_token_fidelity(
        reference=forcing(ollama_double, "F16"),
        variants={"F16": forcing(ollama_double, "F16"), "Q4_K_M": forcing(ollama_double, "Q4_K_M")},
        messages=cases["messages"],
        reference_outputs=cases["outputs"],
        on_case=records.append,
    )
    itself, q4 = summaries["F16"], summaries["Q4_K_M"]
    assert itself.kld_max == pytest.approx(0.0, abs=1e-9)  # the reference following itself
    assert itself.top1_agreement == 1.0
    embedded = cases["embedded"]
    # the server may split the output differently, and a grammar-forced token is stepped over by characters
    assert abs(q4.positions - embedded.positions) <= 0.05 * embedded.positions
    # Not equal: a lower bound from 20 tokens, and the server evaluates one token at a time where
    # teacher forcing evaluates a batch, which changes quantized matmul results slightly.
    assert 0.25 * embedded.kld_mean <= q4.kld_mean <= 1.5 * embedded.kld_mean
    assert abs(q4.top1_agreement - embedded.top1_agreement) <= 0.03
    for record in records:
        assert record["error"] is None
        assert record["requests"] >= 1


def test_the_reference_walk_rebuilds_its_output(ollama_double, cases):
    reference = forcing(ollama_double, "F16")
    for case_id, output in cases["outputs"].items():
        walk = reference.follow_text(cases["messages"][case_id], output)
        assert "".join(walk.tokens) == output
        # every position observed; fewer than 20 where tokens share a text (merged)
        assert all(top is not None and 10 < len(top) <= 20 for top in walk.top)
