"""The OpenAI-compatible backend without a model: a variant's options and shorthand, and how a
failed call is named (the openai client's own exceptions, built as it builds them)."""

import json

import httpx
import httpx2
import openai
import pytest

from graphs.streamed import ModelCallError
from quantgate.backends import BackendError, capabilities, open_variant
from quantgate.backends.openai._openai import openai_endpoint
from quantgate.backends.openai._openai_chat import classify
from quantgate.backends.openai._openai_forcing import LOGPROBS_FORCING as OPENAI_FORCING
from quantgate.inputs._shorthands import parse_spec
from quantgate.inputs._variants import Variant, VariantSpecError

URL = "http://127.0.0.1:8000/v1"


def variant(**options):
    return Variant(name="q4", backend="openai", model="q4_k_m", options=options)


def test_the_endpoint_is_the_base_url_the_model_and_no_key():
    assert openai_endpoint(variant(base_url=URL + "/")) == (URL, "q4_k_m", None)


def test_the_key_is_read_from_the_variable_the_variant_names(monkeypatch):
    monkeypatch.setenv("QG_TEST_KEY", "s3cret")
    assert openai_endpoint(variant(base_url=URL, api_key_env="QG_TEST_KEY")) == (URL, "q4_k_m", "s3cret")


def test_a_missing_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("QG_TEST_KEY", raising=False)
    with pytest.raises(BackendError, match=r"variable QG_TEST_KEY \(its api_key_env option\) is not"):
        openai_endpoint(variant(base_url=URL, api_key_env="QG_TEST_KEY"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs the option base_url"),
        ({"base_url": "127.0.0.1:8000/v1"}, "is not an http:// or https:// URL"),
        ({"base_url": "http://[::1/v1"}, r"base_url 'http://\[::1/v1' is not a valid URL: Invalid IPv6 URL"),
        ({"base_url": "http://127.0.0.1:port/v1"}, "is not a valid URL: Port could not be cast"),
        ({"base_url": "http://127.0.0.1:99999/v1"}, "is not a valid URL: Port out of range"),
        ({"base_url": "http:///v1"}, "names no host"),
        ({"base_url": URL, "api_key_env": ""}, "must be the NAME of an environment variable"),
    ],
)
def test_bad_options_are_refused_with_what_to_do(options, message):
    with pytest.raises(BackendError, match=message):
        openai_endpoint(variant(**options))


def test_an_unknown_response_format_is_refused_before_any_call():
    refused = pytest.raises(BackendError, match="response_format 'xml' is not one of auto, json_schema")
    with refused, open_variant(variant(base_url=URL, response_format="xml"), {"type": "object"}):
        pass


def test_the_shorthand_names_model_and_base_url():
    parsed = parse_spec("openai:qwen2.5-7b-instruct@http://gpu-box:8000/v1")
    assert (parsed.name, parsed.backend, parsed.model) == (
        "qwen2.5-7b-instruct",
        "openai",
        "qwen2.5-7b-instruct",
    )
    assert parsed.options == {"base_url": "http://gpu-box:8000/v1"}
    assert parse_spec("openai:org/model:q4@https://h/v1").name == "org_model:q4"


def test_a_shorthand_without_base_url_says_the_form():
    with pytest.raises(VariantSpecError, match="expected openai:MODEL@BASE_URL"):
        parse_spec("openai:q4_k_m")


def test_the_backend_declares_a_server_with_json_schema():
    declared = capabilities(variant(base_url=URL))
    assert (declared.parallel, declared.memory, declared.json_schema) == ("server", "server", True)
    assert (declared.token_fidelity, declared.logprobs_forcing) == ("logprobs", OPENAI_FORCING)


REQUEST = httpx2.Request("POST", URL + "/chat/completions")


def status_error(status, body, content_type="application/json"):
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    response = httpx2.Response(
        status, request=REQUEST, content=content, headers={"content-type": content_type}
    )
    parsed = body if isinstance(body, dict) else None
    return openai.APIStatusError(f"Error code: {status}", response=response, body=parsed)


@pytest.mark.parametrize(
    ("error", "kind", "retryable", "said"),
    [
        (status_error(401, {"detail": "Invalid API key"}), "unauthorized", False, "Invalid API key"),
        (status_error(404, {"error": {"message": "model 'x' not found"}}), "not_found", False, "model 'x'"),
        (status_error(429, {"error": {"message": "slow down"}}), "busy", True, "slow down"),
        (status_error(503, {"error": "loading"}), "busy", True, "loading"),
        (status_error(500, {"error": {"message": "boom"}}), "server_error", True, "server error 500: boom"),
        (status_error(400, {"error": {"message": "too long"}}), "bad_request", False, "too long"),
        (
            status_error(502, "<html><body>Bad Gateway</body></html>", "text/html"),
            "server_error", True, "an HTML page, not the API's JSON",
        ),
        (openai.APIConnectionError(request=REQUEST), "connection", True, "not reachable"),
        (openai.APITimeoutError(request=REQUEST), "timeout", True, "timed out"),
        (httpx.ReadTimeout("read"), "timeout", True, "timed out"),
        (httpx2.ReadTimeout("read"), "timeout", True, "timed out"),  # the openai client's fork of httpx
        (httpx.RemoteProtocolError("peer closed connection"), "stream_cut", True, "peer closed"),
        (httpx2.RemoteProtocolError("peer closed connection"), "stream_cut", True, "peer closed"),
        (openai.APIError("model crashed", REQUEST, body=None), "stream_error", True, "model crashed"),
        (KeyError("choices"), "backend_error", False, "KeyError"),
    ],
)  # fmt: skip
def test_failures_are_named_by_kind(error, kind, retryable, said):
    named = classify(error)
    assert isinstance(named, ModelCallError)
    assert (named.kind, named.retryable) == (kind, retryable)
    assert said in str(named)


def test_the_record_says_how_answers_were_held_to_the_schema():
    from quantgate.backends import structured_output_note
    from quantgate.backends.openai._openai import NO_SCHEMA_DECODING

    assert structured_output_note("openai", {"decoding": NO_SCHEMA_DECODING}) == (
        "no response_format: validation and repairs only"
    )
    assert structured_output_note("langchain", {"name": "FakeChatModel"}) == "validation and repairs only"
    assert structured_output_note("ollama", None) == "not recorded"


def test_the_model_file_a_server_serves_gives_the_variant_its_sha256(tmp_path):
    import hashlib

    gguf = tmp_path / "served.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    served = variant(base_url=URL, model_file=str(gguf))
    assert served.sha256 == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert served.file_size_bytes == 4 + 256 * 8
    with pytest.raises(ValueError, match=r"options\.model_file .*missing\.gguf: no such file"):
        variant(base_url=URL, model_file=str(tmp_path / "missing.gguf"))


def test_a_malformed_base_url_skips_its_variant_and_the_others_run(dataset, tmp_path):
    """`http://[::1/v1` once aborted the whole run (the HTTP client's InvalidURL in the worker, an
    "unexpected error"): now that variant is skipped, naming why, and the others run (issue 46)."""
    from quantgate.evaluate._evaluation_run import run_evaluation
    from quantgate.evaluate._options import RunOptions
    from quantgate.inputs._variants import VariantSet
    from quantgate.rundir._store import load_run
    from tests.fakes import SleepyChatModel

    bad = Variant(name="bad", backend="openai", model="m", options={"base_url": "http://[::1/v1"})
    variant_set = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", SleepyChatModel(delay_s=0.001)),
            bad,
            Variant.from_chat_model("good", SleepyChatModel(delay_s=0.001)),
        ],
    )
    options = RunOptions(out=tmp_path, progress=False, token_fidelity=False)
    summary = load_run(run_evaluation(dataset, variant_set, options=options)).summary
    statuses = {entry.name: (entry.status, entry.error) for entry in summary.variants}
    assert statuses["ref"] == ("ok", None)
    assert statuses["good"] == ("ok", None)
    assert statuses["bad"] == (
        "skipped",
        "variant bad: base_url 'http://[::1/v1' is not a valid URL: Invalid IPv6 URL",
    )


@pytest.mark.parametrize(
    ("api", "kind"), [("chat", "json_schema"), ("chat", "json_object"), ("completions", "json_schema")]
)
def test_a_case_s_own_schema_goes_the_way_the_server_took_the_dataset_s(api, kind):
    """Per-case tools: the client for a case's record schema (`OpenedVariant.for_schema`) sends that
    schema the way the probe chose for the dataset's, without probing again."""
    from quantgate.backends.openai._openai import _client, _Settings

    own = {"type": "object", "properties": {"call": {"type": "null"}}, "required": ["call"]}
    settings = _Settings.of(variant(base_url=URL, api=api))
    client = _client((URL, "q4_k_m", None), settings, kind, own)
    body = (client.llm.extra_body if api == "completions" else client.extra_body) or {}
    sent = body["response_format"]
    assert sent["type"] == kind
    if kind == "json_schema":
        assert sent["json_schema"]["schema"] == own
    else:
        assert sent["schema"]["properties"] == own["properties"]


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (500, {"error": {"message": "the model crashed"}}, "server error 500: the model crashed"),
        (400, {"error": {"message": "bad tools"}, "code": 400}, "bad tools"),
        (422, {"detail": "max_tokens: not a number"}, "max_tokens: not a number"),
    ],
)
def test_the_real_client_s_status_error_keeps_the_body_s_message(status, body, said):
    """The openai client gives a status error the body's `error` object alone (`_make_status_error`:
    `body.get("error", body)`), not the whole body: its message is still the one named."""
    client = openai.OpenAI(api_key="k", base_url=URL)
    response = httpx2.Response(
        status,
        request=REQUEST,
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    named = classify(client._make_status_error_from_response(response))
    assert said in str(named)
    assert "not the API's JSON" not in str(named)
