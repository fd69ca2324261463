"""Resumed greedy generation over Ollama's chat API, against a scripted client (no server)."""

import math

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from ollama import ChatResponse, Message

from quantgate.backends import BackendError
from quantgate.backends._forcing import chat_messages
from quantgate.backends.ollama._ollama_forcing import OllamaForcing

MESSAGES = [SystemMessage(content="Extract."), HumanMessage(content="Ana, 30")]


def entry(token, *alternatives):
    """A logprob entry: `token` is generated; alternatives are (token, probability) pairs."""
    top = [(token, 0.9), *alternatives]
    return {
        "token": token,
        "logprob": math.log(0.9),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top],
    }


class ScriptedClient:
    """Answers each chat with the next script: a list of logprob entries, then done."""

    def __init__(self, *scripts):
        self.scripts = list(scripts)
        self.calls = []
        self.closed = 0

    def chat(self, **request):
        self.calls.append(request)
        script = self.scripts.pop(0)

        def stream():
            try:
                for item in script:
                    yield ChatResponse(
                        model="m", done=False, message=Message(role="assistant", content=item["token"]),
                        logprobs=[item],
                    )  # fmt: skip
                yield ChatResponse(model="m", done=True, message=Message(role="assistant", content=""))
            finally:
                self.closed += 1

        return stream()


def forcing(client, top=3):
    model = OllamaForcing(host="http://h:1", model="m", options={"seed": 0}, top_logprobs=top)
    model.client = client
    return model


def test_a_model_that_agrees_costs_one_request():
    client = ScriptedClient([entry(' {"'), entry("a"), entry('"}')])
    walk = forcing(client).follow_text(MESSAGES, ' {"a"}')
    assert walk.tokens == (' {"', "a", '"}')
    assert walk.requests == 1
    assert walk.top[1] == pytest.approx({"a": math.log(0.9)})
    request = client.calls[0]
    assert request["logprobs"] is True
    assert request["top_logprobs"] == 3
    assert request["options"]["temperature"] == 0.0
    assert request["messages"] == [
        {"role": "system", "content": "Extract."},
        {"role": "user", "content": "Ana, 30"},
    ]


def test_after_a_disagreement_the_output_so_far_is_prefilled():
    client = ScriptedClient(
        [entry(' {"'), entry("b", ("a", 0.05))],  # picks b where the reference has a; stream closed
        [entry("a"), entry('"}')],  # wait: the second answer continues from the prefill
    )
    walk = forcing(client).follow_tokens(MESSAGES, [' {"', "a", '"}'])
    assert walk.tokens == (' {"', "a", '"}')
    assert walk.requests == 2
    assert walk.top[1] == pytest.approx({"b": math.log(0.9), "a": math.log(0.05)})  # kept: same history
    assert client.calls[1]["messages"][-1] == {"role": "assistant", "content": ' {"a'}
    assert client.closed == 2  # the first stream was closed at the disagreement


def test_the_reference_follows_its_text_through_the_top_k_list():
    # unconstrained, the reference would write ' [' where its recorded (grammar-bound) output has ' {"'
    client = ScriptedClient([entry(" [", (" {", 0.02), (' {"', 0.08))], [entry("a"), entry('"}')])
    walk = forcing(client).follow_text(MESSAGES, ' {"a"}')
    assert walk.tokens == (' {"', "a", '"}')
    assert client.calls[1]["messages"][-1]["content"] == ' {"'  # the likelier of two that fit


def test_the_reference_follows_a_generated_token_that_its_text_continues_with():
    client = ScriptedClient([entry(" {"), entry('"a'), entry('"}')])  # another split of the same text
    walk = forcing(client).follow_text(MESSAGES, ' {"a"}')
    assert walk.tokens == (" {", '"a', '"}')
    assert walk.requests == 1


def test_text_out_of_reach_of_the_top_k_list_advances_one_character():
    # the grammar forced "a" where the free model lists only x and y: that position's list is
    # still the model's prediction after the reference's history, so it is kept
    client = ScriptedClient([entry(' {"'), entry("x", ("y", 0.05))], [entry('"}')])
    walk = forcing(client).follow_text(MESSAGES, ' {"a"}')
    assert walk.tokens == (' {"', "a", '"}')
    assert walk.top[1] == pytest.approx({"x": math.log(0.9), "y": math.log(0.05)})
    assert client.calls[1]["messages"][-1]["content"] == ' {"a'


def test_a_reference_that_ends_early_leaves_that_position_unobserved():
    client = ScriptedClient([entry(' {"')], [entry('"}')])
    walk = forcing(client).follow_text(MESSAGES, ' {"a"}')
    assert walk.tokens == (' {"', "a", '"}')  # stepped over "a" (one character), then followed
    assert walk.top[1] is None


def test_a_variant_that_ends_early_leaves_that_position_unobserved():
    client = ScriptedClient([entry(' {"')], [entry('"}')])  # ends where the reference has "a"
    walk = forcing(client).follow_tokens(MESSAGES, [' {"', "a", '"}'])
    assert walk.tokens == (' {"', "a", '"}')
    assert walk.top[1] is None
    assert walk.top[2] is not None
    assert client.calls[1]["messages"][-1]["content"] == ' {"a'


def test_a_server_without_logprobs_is_named():
    class NoLogprobs(ScriptedClient):
        def chat(self, **request):
            return iter([ChatResponse(model="m", done=False, message=Message(role="assistant", content="x"))])

    with pytest.raises(BackendError, match="no log-probabilities"):
        forcing(NoLogprobs()).follow_text(MESSAGES, "x")


def test_a_server_that_is_down_is_a_backend_error():
    model = OllamaForcing(host="http://127.0.0.1:9", model="m", options={}, timeout_s=2)
    with pytest.raises(BackendError, match=r"127\.0\.0\.1:9"):
        model.follow_text(MESSAGES, "x")


def test_messages_keep_roles_and_text():
    assert chat_messages(MESSAGES)[1] == {"role": "user", "content": "Ana, 30"}
