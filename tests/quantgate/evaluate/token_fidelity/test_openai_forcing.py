"""Top-k forcing over an OpenAI-compatible server, on answers recorded once from the real
`llama_cpp.server` (data/openai_*.json, Gemma 3 270M Q4_K_M, top 3) and a scripted transport."""

import json
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage

from quantgate.backends import BackendError
from quantgate.backends.openai._openai_forcing import (
    OpenAIForcing,
    completion_steps,
    echoed_target,
)

DATA = Path(__file__).parent / "data"
# the prompt both recorded answers were asked with (Gemma's chat format, written out)
PROMPT = "<start_of_turn>user\nCapital of France?<end_of_turn>\n<start_of_turn>model\n"
MESSAGES = [HumanMessage(content="Capital of France?")]


def recorded(name):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def gemma(messages):
    return (
        "".join(f"<start_of_turn>user\n{m.text}<end_of_turn>\n" for m in messages) + "<start_of_turn>model\n"
    )


def test_completion_steps_read_the_generated_tokens_and_their_lists():
    steps = completion_steps(recorded("openai_completion.json"), 3)
    assert [token for token, _ in steps] == ["The", " model", " is"]
    assert steps[0][1] == {"The": -3.2377357482910156, "Capital": -3.653486728668213, "(": -4.155486106872559}
    # a k below the server's cuts each list to the k most likely
    assert completion_steps(recorded("openai_completion.json"), 1)[1][1] == {" model": -2.8240206241607666}


def test_an_echo_gives_the_targets_tokens_with_the_lists_the_generation_gave():
    steps = echoed_target(recorded("openai_echo.json"), PROMPT, "Paris.", 3)
    assert steps is not None
    assert [token for token, _ in steps] == ["Paris", "."]
    # the echo's list at the target's first token is the one generating from the prompt gave
    # (two separate requests to the server)
    assert steps[0][1] == completion_steps(recorded("openai_completion.json"), 3)[0][1]
    # llama-cpp-python adds the echoed token to its list ('Paris', -7.3): cut back to the top 3
    assert "Paris" not in steps[0][1]


def test_an_echo_that_does_not_spell_the_target_is_not_used():
    echo = recorded("openai_echo.json")
    assert echoed_target(echo, PROMPT, "Paris!", 3) is None  # the text is not prompt + target
    assert echoed_target(echo, PROMPT + "Par", "is.", 3) is None  # no run of tokens spells "is."
    assert echoed_target(recorded("openai_completion.json"), PROMPT, "The", 3) is None  # no echo


def forcing_of(transport, **options):
    options = {"render": gemma, "top_logprobs": 3, **options}
    return OpenAIForcing(base_url="http://s/v1", model="m", transport=transport, **options)


def scripted(*answers, template=404):
    """A transport answering /apply-template with `template` and each other POST with the next answer."""
    requests = []

    def handle(request):
        if request.url.path == "/apply-template":
            return httpx.Response(template, json={"prompt": PROMPT} if template == 200 else {})
        requests.append(json.loads(request.content))
        return httpx.Response(200, json=answers[len(requests) - 1])

    return httpx.MockTransport(handle), requests


def test_a_server_that_does_not_echo_is_walked_by_resumed_completion():
    transport, requests = scripted(recorded("openai_completion.json"), recorded("openai_completion.json"))
    forcing = OpenAIForcing(
        base_url="http://s/v1", model="m", render=gemma, top_logprobs=3, transport=transport, echo=True
    )
    followed = forcing.follow_tokens(MESSAGES, ["The", " model"])
    assert forcing.echo is False
    assert forcing.way == "completions"
    assert followed.tokens == ("The", " model")
    assert followed.requests == 1
    assert followed.top[1] == completion_steps(recorded("openai_completion.json"), 3)[1][1]
    assert requests[0]["echo"] is True
    assert requests[1]["prompt"] == PROMPT
    assert requests[1]["max_tokens"] == 2


def test_a_divergence_resumes_with_the_target_so_far_appended_to_the_prompt():
    completion = recorded("openai_completion.json")
    transport, requests = scripted(completion, completion)
    forcing = OpenAIForcing(  # no echo unless asked for
        base_url="http://s/v1", model="m", render=gemma, top_logprobs=3, transport=transport
    )
    followed = forcing.follow_tokens(MESSAGES, ["The", " capital", " is"])  # the model says " model"
    assert followed.tokens == ("The", " capital", " is")
    assert followed.requests == 2
    # the diverging position keeps its list (its history was the target's); the next request
    # continues after the target's token, and asks for as many tokens as are left
    assert followed.top[1] == completion_steps(completion, 3)[1][1]
    assert [r["echo"] for r in requests] == [False, False]
    assert requests[0]["prompt"] == PROMPT
    assert requests[1]["prompt"] == PROMPT + "The capital"
    assert requests[1]["max_tokens"] == 1


def test_without_a_prompt_text_the_forcing_refuses_and_errors_are_backend_errors():
    transport, requests = scripted()
    forcing = OpenAIForcing(base_url="http://s/v1", model="m", top_logprobs=2, transport=transport)
    # no render and /apply-template answers 404: the chat API would close a prefilled answer
    with pytest.raises(BackendError, match=r'prompt text is unknown.*use api = "completions"'):
        forcing.follow_text(MESSAGES, "Paris")
    assert forcing.template is False
    assert requests == []  # nothing sent to a completion or chat endpoint

    def refuse(request):
        return httpx.Response(400, json={"error": "logprobs not supported"})

    failing = OpenAIForcing(
        base_url="http://s/v1", model="m", render=gemma, transport=httpx.MockTransport(refuse)
    )
    with pytest.raises(BackendError, match=r"answered 400 to completions: .*logprobs not supported"):
        failing.follow_text(MESSAGES, "Paris")
