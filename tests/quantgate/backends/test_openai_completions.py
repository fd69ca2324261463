"""`api = "completions"` without a model: the options, the request bodies the real client sends
(to a small local server that records them and streams completions), and the probe that shows
whether a server enforces a grammar or a JSON schema rather than ignoring it with a 200."""

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from graphs.streamed import ModelCallError
from quantgate.backends import BackendError, open_variant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._schema_grammar import gbnf_grammar
from quantgate.backends.openai._openai import _chat, _Settings
from quantgate.backends.openai._openai_completions import PROBE_LITERAL, probe_verdict
from quantgate.inputs._variants import Variant

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "stars": {"type": "integer"}},
    "required": ["city", "stars"],
    "additionalProperties": False,
}
ASK = [SystemMessage("Extract the record."), HumanMessage("Le Cirque in Paris has 4 stars.")]
ANSWER = ['{"city"', ': "Paris"', ', "stars": 4}']


@dataclass
class Behaviour:
    """What the recording server does: which ways of holding answers it enforces (the others it
    ignores, answering 200), how a case's stream ends, or a status it fails cases with."""

    enforces: tuple[str, ...] = ("grammar",)
    finish: str | None = "stop"
    fail_status: int | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)
    scores: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]] | None = None
    """The answer to a request that is not streamed (the log-probabilities of given text: verification)."""


def probe_text(body: dict[str, Any], behaviour: Behaviour) -> list[str] | None:
    """The answer to a probe: the literal when the probe's field is enforced, else a JSON start."""
    if body.get("grammar") == f'root ::= "{PROBE_LITERAL}"':
        return ["zq", "xv"] if "grammar" in behaviour.enforces else [" {"]
    if (body.get("response_format") or {}).get("json_schema", {}).get("name") == "probe":
        return ['"zq', 'xv"'] if "json_schema" in behaviour.enforces else [" {"]
    return None


def events(texts: list[str], finish: str | None) -> Iterator[bytes]:
    for i, text in enumerate(texts):
        last = i == len(texts) - 1
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish if last else None}
        event = {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}
        yield f"data: {json.dumps(event)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def serve(behaviour: Behaviour) -> http.server.ThreadingHTTPServer:
    class Completions(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            behaviour.bodies.append({"path": self.path, **body})
            if behaviour.scores is not None and not body.get("stream"):
                status, scored = behaviour.scores(body)
                return self.reply(status, json.dumps(scored).encode(), "application/json")
            texts = probe_text(body, behaviour)
            if texts is None and behaviour.fail_status:
                return self.reply(
                    behaviour.fail_status, b'{"error": {"message": "boom"}}', "application/json"
                )
            stream = b"".join(events(texts or ANSWER, "length" if texts else behaviour.finish))
            self.reply(200, stream, "text/event-stream")

        def reply(self, status: int, content: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def do_GET(self) -> None:
            self.reply(404, b'{"error": {"message": "no"}}', "application/json")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Completions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def recording() -> Iterator[tuple[Behaviour, str]]:
    behaviour = Behaviour()
    server = serve(behaviour)
    yield behaviour, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def completions(url: str, **options) -> Variant:
    return Variant(
        name="served",
        backend="openai",
        model="q4_k_m",
        options={"base_url": url, "api": "completions", "timeout_s": 10, **options},
    )


def test_a_case_goes_to_completions_with_the_rendered_prompt_the_grammar_and_extra_body(recording):
    behaviour, url = recording
    variant = completions(url, extra_body={"repeat_penalty": 1.0}, max_tokens=64, seed=7)
    with open_variant(variant, SCHEMA) as opened:
        answer = opened.chat_model.invoke(ASK)
        runtime = opened.runtime
    assert answer.text == "".join(ANSWER)
    assert answer.response_metadata["finish_reason"] == "stop"
    assert answer.usage_metadata is not None
    assert answer.usage_metadata["output_tokens"] == 3  # no usage sent: the content chunks
    probe, case = behaviour.bodies[0], behaviour.bodies[-1]
    assert probe["path"] == case["path"] == "/v1/completions"
    assert (probe["max_tokens"], probe["repeat_penalty"]) == (3, 1.0)
    assert case["prompt"] == render_prompt(ASK)
    assert case["prompt"].endswith("Text:\nLe Cirque in Paris has 4 stars.\nJSON:")
    assert case["grammar"] == gbnf_grammar(SCHEMA)
    assert '\nroot ::= " "? ' in case["grammar"]  # the optional space the prompt's end needs
    assert (case["max_tokens"], case["seed"], case["temperature"]) == (64, 7, 0.0)
    assert (case["stream"], case["repeat_penalty"]) == (True, 1.0)
    assert "response_format" not in case
    assert (runtime["api"], runtime["response_format"]) == ("completions", "grammar")
    assert runtime["extra_body"] == {"repeat_penalty": 1.0}
    assert runtime["structured_output_probe"] == {"grammar": "enforced"}
    assert runtime["decoding"].startswith("greedy, the JSON schema's GBNF grammar")
    assert runtime["unenforced_schema_keywords"] == []


def test_a_server_ignoring_the_grammar_field_gets_the_json_schema_it_enforces(recording):
    behaviour, url = recording
    behaviour.enforces = ("json_schema",)
    with open_variant(completions(url), SCHEMA) as opened:
        opened.chat_model.invoke(ASK)
        runtime = opened.runtime
    assert runtime["response_format"] == "json_schema"
    assert runtime["structured_output_probe"]["grammar"].startswith("ignored (answered ' {'")
    assert runtime["structured_output_probe"]["json_schema"] == "enforced"
    case = behaviour.bodies[-1]
    assert "grammar" not in case
    assert case["response_format"]["json_schema"]["schema"] == SCHEMA


def test_a_server_enforcing_neither_gets_validation_and_repairs_only(recording, capsys):
    behaviour, url = recording
    behaviour.enforces = ()
    with open_variant(completions(url), SCHEMA) as opened:
        runtime = opened.runtime
    assert runtime["response_format"] == "none"
    assert runtime["decoding"] == "no grammar or response_format: validation and repairs only"
    plain = behaviour.bodies[2]  # after the grammar's and the schema's probes, a plain call
    assert ("grammar" in plain, "response_format" in plain) == (False, False)
    assert "did not enforce grammar (ignored" in capsys.readouterr().err


def test_a_grammar_asked_for_and_ignored_fails_the_variant(recording):
    behaviour, url = recording
    behaviour.enforces = ()
    refused = pytest.raises(BackendError, match=r"does not enforce response_format grammar .*ignored")
    with refused, open_variant(completions(url, response_format="grammar"), SCHEMA):
        pass


@pytest.mark.parametrize(
    ("finish", "status", "kind"),
    [(None, None, "stream_cut"), ("stop", 500, "server_error")],
)
def test_a_case_fails_by_kind_as_on_the_chat_api(recording, finish, status, kind):
    behaviour, url = recording
    behaviour.finish, behaviour.fail_status = finish, status
    with open_variant(completions(url), SCHEMA) as opened, pytest.raises(ModelCallError) as failed:
        opened.chat_model.invoke(ASK)
    assert failed.value.kind == kind


@pytest.mark.parametrize(
    ("kind", "answer", "verdict"),
    [
        ("grammar", "zqxv", "enforced"),
        ("grammar", " zq", "enforced"),  # a start of it: the probe's tokens ran out
        ("grammar", "z", "ignored"),  # one character shows nothing
        ("grammar", ' {"', "ignored"),
        ("json_schema", '"zqxv"', "enforced"),
        ("json_schema", "zqxv", "ignored"),  # not the JSON string the schema allows
        ("grammar", "", "ignored"),
    ],
)
def test_the_probe_believes_only_the_improbable_literal(kind, answer, verdict):
    assert probe_verdict(kind, answer, None) == (verdict, None)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"api": "legacy"}, "api 'legacy' is not one of chat, completions"),
        (
            {"api": "completions", "response_format": "json_object"},
            "json_object' is not one of auto, grammar",
        ),
        (
            {"response_format": "grammar"},
            r"'grammar' is not one of auto, json_schema, json_object, none \(api",
        ),
        ({"extra_body": "repeat_penalty=1"}, "variant q4: extra_body must be a table"),
        ({"extra_body": {"max_tokens": 9, "seed": 1}}, "extra_body sets max_tokens, seed, which quantgate"),
    ],
)
def test_bad_options_are_refused_naming_the_variant(options, message):
    variant = Variant(name="q4", backend="openai", model="m", options={"base_url": "http://h/v1", **options})
    with pytest.raises(BackendError, match=message):
        _Settings.of(variant)


def test_the_chat_api_sends_extra_body_too():
    variant = Variant(
        name="q4",
        backend="openai",
        model="m",
        options={"base_url": "http://h/v1", "extra_body": {"top_k": 1}},
    )
    settings = _Settings.of(variant)
    assert settings.api == "chat"
    chat = _chat(("http://h/v1", "m", None), settings, {"type": "json_object"}, 5)
    assert chat.extra_body == {"top_k": 1, "max_tokens": 5, "response_format": {"type": "json_object"}}
