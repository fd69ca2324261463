"""Verification through llama-cpp-python's REAL server (the session's `llama_server`, the ladder's
Q4_K_M) with `echo`, on short prompts: its echo builds each position's list in Python, so long prompts
take minutes (docs/openai-servers.md)."""

import time

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from quantgate.backends import open_variant
from quantgate.backends.openai._openai_forcing import OpenAIForcing
from quantgate.backends.openai._openai_verify import ServerVerifier
from quantgate.inputs._variants import Variant

pytestmark = pytest.mark.model

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "stars": {"type": "integer"}},
    "required": ["city", "stars"],
    "additionalProperties": False,
}
GREEDY = {"repeat_penalty": 1.0}


def gemma(messages):
    turns = "".join(f"<start_of_turn>user\n{m.text}<end_of_turn>\n" for m in messages)
    return turns + "<start_of_turn>model\n"


def test_the_server_s_own_greedy_text_agrees_with_its_echo_at_every_position(llama_server):
    messages = [HumanMessage("Capital of France? One word.")]
    body = {
        "model": llama_server.model,
        "prompt": gemma(messages),
        "max_tokens": 8,
        "temperature": 0.0,
        **GREEDY,
    }
    decoded = httpx.post(f"{llama_server.url}/completions", json=body, timeout=600).json()["choices"][0]
    forcing = OpenAIForcing(base_url=llama_server.url, model=llama_server.model, render=gemma, timeout_s=600)
    verifier = ServerVerifier(form="echo", forcing=forcing, extra_body=GREEDY)
    verdict = verifier.verify(messages, decoded["text"])
    assert verdict.answer_tokens is not None
    assert verdict.answer_tokens >= 1
    assert verdict.verified_tokens == verdict.answer_tokens  # every position is the top-1
    # verified when the model ended there; else the reason is the end
    assert verdict.verified == (decoded["finish_reason"] == "stop")
    assert verdict.verified or str(verdict.reason).startswith("after the answer the model writes ")
    changed = verifier.verify(messages, "Lyon" + decoded["text"])  # not the model's answer
    assert not changed.verified
    assert changed.verified_tokens == 0


def test_a_base_model_s_grammar_answer_is_decoded_saying_where_the_unconstrained_top_1_left_it(llama_server):
    # the render_prompt text ends in "JSON:", after which the model's own top-1 is a newline; the grammar
    # allows only " {" there, so the unconstrained lists cannot vouch for the grammar's choice
    ask = [SystemMessage("Extract the record."), HumanMessage("Le Cirque in Paris has 4 stars.")]
    options = {"base_url": llama_server.url, "api": "completions", "verify": "echo", "extra_body": GREEDY,
               "max_tokens": 48, "timeout_s": 300}  # fmt: skip
    variant = Variant(name="q4", backend="openai", model=llama_server.model, options=options)
    with open_variant(variant, SCHEMA) as opened:
        decoded = opened.chat_model.invoke(ask)
        started = time.perf_counter()
        again = opened.chat_model.invoke(ask, answer=decoded.text)
        seconds = time.perf_counter() - started
    assert decoded.response_metadata["obtained"] == "decoded"
    assert again.text == decoded.text
    metadata = again.response_metadata
    assert (metadata["obtained"], metadata["verified_tokens"]) == ("decoded", 0)
    assert metadata["unverified_reason"].startswith("at answer token 0 of ")
    assert "the server's top-1 is '\\n'" in metadata["unverified_reason"]
    assert 0 < metadata["verification_s"] < seconds
