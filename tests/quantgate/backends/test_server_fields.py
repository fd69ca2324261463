"""What a server's answers may put into a run's files: a variants file pointing an Ollama `host` or
an `openai` `base_url` at another loopback service (here one that answers an HTML page or text
holding a secret) gets parsed, bounded fields and notes into variants.json, summary.json,
records.jsonl and decision.md, never the service's body."""

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from quantgate.backends import BackendError
from quantgate.backends._server_fields import body_note, error_message, refusal, short_text
from quantgate.backends.ollama._ollama import OllamaServer, classify
from quantgate.backends.ollama._ollama_fields import digest_field, running_fields, shown_fields, version_field
from quantgate.cli._main import main

pytestmark = pytest.mark.slow

SECRET = "hunter2-root-password"
PAGE = f"<!DOCTYPE html><html><body><h1>Router admin</h1><p>{SECRET}</p></body></html>".encode()
METRICS = f'node_uname_info{{nodename="{SECRET}"}} 1\n{SECRET}_total 42\nllamacpp:prompt_tokens_total 7\n'


def chat_stream() -> bytes:
    """A streamed chat completion answering `{}` (the run goes on; the answer does not matter)."""
    choice = {"index": 0, "delta": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


class Service(http.server.BaseHTTPRequestHandler):
    """A loopback service that is not what the variant says: HTML or text holding SECRET on every
    path; with `chat` set, an OpenAI-compatible chat endpoint answering `{}` (or failing with
    `chat` as its status and a text body holding SECRET)."""

    chat: int | None = None

    def reply(self, status: int, content: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def do_GET(self) -> None:
        if self.path == "/metrics":
            return self.reply(200, METRICS.encode(), "text/plain")
        if self.path == "/v1/models":
            return self.reply(
                200, json.dumps({"data": [{"id": "m"}, {"id": SECRET * 20}]}).encode(), "application/json"
            )
        self.reply(200, PAGE, "text/html")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/v1/chat/completions" and self.chat == 200:
            return self.reply(200, chat_stream(), "text/event-stream")
        if self.path == "/v1/chat/completions" and self.chat:
            return self.reply(self.chat, f"internal detail: {SECRET}".encode(), "text/plain")
        self.reply(404 if self.path == "/api/show" else 200, PAGE, "text/html")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service(request: pytest.FixtureRequest) -> Iterator[str]:
    """The service's URL; its chat endpoint's status is the test's parameter (none: no chat)."""
    handler = type("Handler", (Service,), {"chat": getattr(request, "param", None)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run_files(tmp_path: Path, variants: str) -> tuple[dict[str, str], int]:
    """`quantgate run` of one case with the variants file `variants`: every file it wrote, by name."""
    file = tmp_path / "variants.toml"
    file.write_text(variants)
    out = tmp_path / "runs"
    args = ["run", "--dataset", "tech-config", "--variants", str(file), "--limit", "1", "--out", str(out)]
    code = main([*args, "--no-report", "--examples", "0"])
    (run_dir,) = out.iterdir()
    return {p.name: p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()}, code


SERVED = 'options = {{ base_url = "{url}/v1", retry_backoff_s = 0, max_retries = 0 }}\n'
OPENAI = '[[variants]]\nname = "s"\nbackend = "openai"\nmodel = "m"\n' + SERVED
OLLAMA = '[[variants]]\nname = "o"\nbackend = "ollama"\nmodel = "m"\noptions = {{ host = "{url}" }}\n'


def leaked(files: dict[str, str]) -> list[str]:
    return [name for name, text in files.items() if SECRET in text or "Router admin" in text]


def test_an_ollama_host_answering_html_skips_the_variant_naming_the_path_not_the_page(service, tmp_path):
    files, _ = run_files(tmp_path, OLLAMA.format(url=service))
    assert leaked(files) == []
    entry = json.loads(files["summary.json"])["variants"][0]
    assert entry["status"] == "skipped"
    assert f"{service}/api/version answered 200 with an HTML page ({len(PAGE)} bytes)" in entry["error"]


@pytest.mark.parametrize("service", [200, 500], indirect=True)
def test_an_openai_base_url_on_another_service_records_no_body(service, tmp_path):
    files, _ = run_files(tmp_path, OPENAI.format(url=service))
    assert leaked(files) == []
    assert {"summary.json", "variants.json", "records.jsonl", "decision.md", "decision.json"} <= set(files)
    runtime = json.loads(files["variants.json"])["variants"][0]["runtime"]
    assert runtime["server_models"] == ["m"]  # the other id is too long to be a model id
    assert runtime["props"] == f"not recorded: GET /props answered an HTML page ({len(PAGE)} bytes)"
    assert runtime["metrics"] == {"llamacpp:prompt_tokens_total": 7.0}
    record = json.loads(files["records.jsonl"].splitlines()[0])
    if record["error_kind"] == "server_error":
        size = len(f"internal detail: {SECRET}")
        assert record["error"].endswith(
            f"server error 500: a body of type text/plain ({size} bytes), not the API's JSON"
        )
    else:
        assert record["error_kind"] == "invalid_output"  # `{}` is not the dataset's record


def test_short_text_keeps_only_short_printable_strings():
    assert short_text("b6000-abc") == "b6000-abc"
    assert [short_text(v) for v in (None, 3, "", "a" * 201, "a\x1b[2Jb", "a\nb", "a\u202eb")] == [None] * 7


def test_an_error_message_is_the_apis_json_message_bounded():
    assert error_message({"error": {"message": "model 'x'\n  not found"}}) == "model 'x' not found"
    assert error_message({"error": "loading"}) == "loading"
    assert error_message({"detail": "Invalid API key"}) == "Invalid API key"
    assert error_message({"error": {"code": 5}, "password": SECRET}) is None
    assert error_message(["not", "a", "dict"]) is None
    long = error_message({"error": "x" * 1000})
    assert long == "x" * 300 + "…"
    assert error_message({"error": "a\x1b[2Jb"}) == "a[2Jb"


def test_a_body_that_does_not_parse_is_described_by_kind_and_size():
    assert body_note("text/html; charset=utf-8", 12) == "an HTML page (12 bytes)"
    assert body_note("text/plain", 3) == "a body of type text/plain (3 bytes)"
    assert body_note(f"x/{SECRET} with spaces", 3) == "a body with no valid content type (3 bytes)"
    assert body_note(None, 0) == "a body with no valid content type (0 bytes)"
    answer = httpx.Response(500, json={"password": SECRET})
    assert refusal(answer) == f"a body of type application/json ({len(answer.content)} bytes)"


def test_only_typed_fields_of_ollamas_show_and_ps_are_kept():
    show = {"details": {"family": "gemma3", "quantization_level": "Q4_K_M", "format": ["x"], "secret": SECRET,
                        "families": ["gemma3", "<b>"]},
            "parameters": f'temperature 1\nstop "<end_of_turn>"\n<html>{SECRET}\n',
            "capabilities": ["completion", "tools", SECRET * 5], "license": SECRET}  # fmt: skip
    assert shown_fields(show) == {
        "details": {
            "family": "gemma3",
            "quantization_level": "Q4_K_M",
            "format": None,
            "families": ["gemma3"],
        },
        "parameters": 'temperature 1\nstop "<end_of_turn>"',
        "capabilities": ["completion", "tools"],
    }
    entry = {
        "name": "m",
        "size": 10,
        "size_vram": -1,
        "context_length": True,
        "expires_at": SECRET,
        "x": SECRET,
    }
    assert running_fields(entry) == {"name": "m", "model": None, "size": 10, "size_vram": None,
                                     "context_length": None, "expires_at": None, "digest": None}  # fmt: skip


def test_an_ollama_answer_that_is_not_json_is_described(service):
    server = OllamaServer(service, timeout_s=5)
    with pytest.raises(BackendError) as raised:
        server.version()
    assert str(raised.value).startswith(
        f"{service}/api/version answered 200 with an HTML page ({len(PAGE)} bytes), not Ollama's JSON;"
    )


def test_an_ollama_version_or_digest_that_is_not_one_is_missing():
    assert version_field("0.12.6") == "0.12.6"
    assert [version_field(v) for v in (f"<b>{SECRET}</b>", "1" * 65, 12, None)] == [None] * 4
    assert digest_field("a" * 64) == "a" * 64
    assert [digest_field(v) for v in (SECRET, "a" * 63, None)] == [None] * 3


def ollama_error(status: int, content: bytes, content_type: str) -> BaseException:
    """The `ResponseError` the ollama client raises for an error answer (its body text, or the
    `error` of its JSON, as the error)."""
    from ollama import ResponseError

    request = httpx.Request("POST", "http://h/api/chat")
    response = httpx.Response(
        status, content=content, headers={"content-type": content_type}, request=request
    )
    try:
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            raise ResponseError(exc.response.text, exc.response.status_code) from None
    except ResponseError as exc:
        return exc
    raise AssertionError("no error")


def test_an_ollama_error_answered_with_a_page_is_described_and_a_json_error_quoted():
    named = classify(ollama_error(502, PAGE, "text/html"))
    assert str(named) == f"server error 502: an HTML page ({len(PAGE)} bytes)"
    assert str(classify(ollama_error(500, b'{"error": "model crashed"}', "application/json"))) == (
        "server error 500: model crashed"
    )
