"""Top-k forcing and server metadata against the real `llama_cpp.server` (the ladder's Q4_K_M),
cross-checked with the same file run embedded in this process."""

import httpx
import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from quantgate.backends.openai._openai_forcing import OpenAIForcing, completion_steps
from quantgate.backends.openai._openai_metadata import NOT_OFFERED, server_metadata

pytestmark = pytest.mark.model

# short targets, scored as given (the server tokenizes them)
CASES = {
    "Capital of France as JSON with key capital.": '{"capital": "Paris"}',
    "Extract the name: Ana is 30 years old.": '{"name": "Ana"}',
}


def gemma(messages):
    turns = "".join(f"<start_of_turn>user\n{m.text}<end_of_turn>\n" for m in messages)
    return turns + "<start_of_turn>model\n"


def test_the_server_lists_its_model_and_has_no_llama_cpp_props(llama_server):
    meta = server_metadata(llama_server.url, llama_server.model)
    assert meta["server_models"] == ["q4_k_m"]
    assert meta["model_listed"] is True
    assert meta["props"] == NOT_OFFERED  # llama_cpp.server answers 404 to /props and /metrics
    assert meta["metrics"] == NOT_OFFERED


def test_the_greedy_token_is_the_top_of_each_reported_list(llama_server):
    prompt = gemma([HumanMessage(content=next(iter(CASES)))])
    body = {"model": "q4_k_m", "prompt": prompt, "max_tokens": 6, "temperature": 0.0, "logprobs": 5,
            "repeat_penalty": 1.0}  # fmt: skip
    steps = completion_steps(httpx.post(f"{llama_server.url}/completions", json=body, timeout=600).json(), 5)
    assert len(steps) == 6
    assert all(token == max(top, key=top.__getitem__) for token, top in steps)


def test_echo_scoring_agrees_with_the_same_file_embedded(llama_server, ladder):
    from llama_cpp import Llama

    forcing = OpenAIForcing(
        base_url=llama_server.url, model="q4_k_m", render=gemma, top_logprobs=5, timeout_s=600, echo=True
    )
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    embedded = Llama(q4.model, n_ctx=512, logits_all=True, verbose=False)
    agree = positions = 0
    for question, target in CASES.items():
        messages = [HumanMessage(content=question)]
        followed = forcing.follow_text(messages, target)
        assert forcing.way == "echo"
        assert followed.requests == 1
        assert "".join(followed.tokens) == target
        tokens = embedded.tokenize((gemma(messages) + target).encode(), add_bos=True, special=True)
        embedded.reset()
        embedded.eval(tokens)
        scores = np.asarray(embedded.scores[: len(tokens)])
        start = len(tokens) - len(followed.tokens)
        assert [embedded.detokenize([t]).decode() for t in tokens[start:]] == list(followed.tokens)
        for position, top in zip(range(start, len(tokens)), followed.top, strict=True):
            assert top is not None
            here = embedded.detokenize([int(np.argmax(scores[position - 1]))]).decode(errors="ignore")
            agree += here == max(top, key=top.__getitem__)
            positions += 1
    print(f"top-1 agreement, server echo vs embedded: {agree}/{positions}")
    assert positions >= 10
    assert agree / positions >= 0.9
