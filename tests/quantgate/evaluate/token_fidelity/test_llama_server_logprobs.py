"""Top-k forcing over llama.cpp's `llama-server`, on an answer recorded once from the real server
(data/llama_server_completion.json: the ladder's Gemma 3 270M Q4_K_M, llama-server built from
llama-cpp-python 0.3.36's sources, `/v1/completions` with `logprobs: 3` after "The capital of France
is"). llama-server answers `logprobs` there in the chat API's form (`logprobs.content`, one entry
per token with its own `top_logprobs` list), not the completions API's (`tokens`, and
`top_logprobs` as one dict per token) that llama-cpp-python's server sends."""

import json
from pathlib import Path

import httpx
from langchain_core.messages import HumanMessage

from quantgate.backends.openai._openai_forcing import OpenAIForcing, completion_steps

ANSWER = json.loads((Path(__file__).parent / "data" / "llama_server_completion.json").read_text())
TOP_3 = {" the": -1.669321060180664, " a": -2.0961856842041016, " Paris": -2.62115478515625}


def test_completion_steps_read_llama_servers_logprobs_content():
    steps = completion_steps(ANSWER, 3)
    assert [token for token, _ in steps] == [" the", " capital", " of"]
    assert steps[0][1] == TOP_3
    # a k below the server's cuts each list to the k most likely
    assert completion_steps(ANSWER, 1)[2][1] == {" of": -0.10780002176761627}


def test_a_forcing_follows_a_target_along_llama_servers_lists():
    asked = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content))
        return httpx.Response(200, json=ANSWER)

    forcing = OpenAIForcing(
        base_url="http://llama-server.test/v1",
        model="q4_k_m",
        top_logprobs=3,
        render=lambda messages: "The capital of France is",
        transport=httpx.MockTransport(answer),
    )
    followed = forcing.follow_text([HumanMessage("unused: render gives the prompt")], " the capital of")
    assert followed.tokens == (" the", " capital", " of")
    assert followed.top[0] == TOP_3
    assert followed.requests == 1
    assert [body["prompt"] for body in asked] == ["The capital of France is"]
