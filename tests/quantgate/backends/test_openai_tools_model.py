"""Native tools against llama-cpp-python's REAL server (`python -m llama_cpp.server --chat_format
chatml-function-calling`, its tool-call parser, with the ladder's Q4_K_M), through a recording proxy
that keeps each request and the server's answer: the tools go natively, the server's parsed call
reaches the record and is scored by the tool-calling scorer. The bundled model is a weak base
model: what it calls is not asserted, only that the record is what the server returned."""

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from evaluators.tool_calls import score_call
from quantgate.backends.openai._openai_tools import TOOLS_DECODING
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records

pytestmark = [pytest.mark.model, pytest.mark.slow]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]  # fmt: skip
CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "oslo",
        "What is the weather in Oslo?",
        {"call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
    ),
    ("joke", "Tell me a joke about cats.", {"call": None}),
]
EXAMPLE = {"id": "ex", "text": "Weather in Rome?",
           "expected": {"call": {"name": "get_weather", "arguments": {"city": "Rome"}}}}  # fmt: skip


@pytest.fixture
def tool_parsing_server(ladder: VariantSet) -> Iterator[Any]:
    """llama-cpp-python's server with its `chatml-function-calling` tool-call parser."""
    from tests.model_fixtures import LlamaCppServerProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = LlamaCppServerProcess(
        q4.model, "--chat_format", "chatml-function-calling", "--interrupt_requests", "False"
    )
    yield server
    server.stop()


@pytest.fixture
def proxy(tool_parsing_server) -> Iterator[tuple[str, list[tuple[dict[str, Any], dict[str, Any]]]]]:
    """A proxy in front of the server: its base URL, and each chat request with the server's answer."""
    exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
    upstream = tool_parsing_server.url.removesuffix("/v1")

    class Forward(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            answer = httpx.post(upstream + self.path, json=body, timeout=300)
            if self.path.endswith("/chat/completions") and answer.status_code == 200:
                exchanges.append((body, answer.json()))
            self.reply(answer)

        def do_GET(self) -> None:
            self.reply(httpx.get(upstream + self.path, timeout=30))

        def reply(self, answer: httpx.Response) -> None:
            self.send_response(answer.status_code)
            self.send_header("content-type", answer.headers.get("content-type", "application/json"))
            self.send_header("content-length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", exchanges
    server.shutdown()
    server.server_close()
    thread.join()


def _server_record(answer: dict[str, Any]) -> dict[str, Any]:
    """The record the server's answer stands for, read here on its own: its one tool call (the
    arguments' JSON string parsed), or no call."""
    calls = answer["choices"][0]["message"].get("tool_calls") or []
    shaped = [
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in calls
    ]
    return {"call": shaped[0] if len(shaped) == 1 else (shaped or None)}


def test_the_server_s_parsed_call_reaches_the_record_and_is_scored(proxy, tmp_path):
    url, exchanges = proxy
    root = tmp_path / "weather"
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", "tools": TOOLS}))
    lines = [{"id": i, "text": t, "expected": e} for i, t, e in CASES]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "examples.jsonl").write_text(json.dumps(EXAMPLE) + "\n")
    options = {"base_url": url, "native_tools": True, "max_tokens": 64}
    variant = Variant(name="Q4_K_M", backend="openai", model="q4_k_m", options=options)
    run_options = RunOptions(out=tmp_path / "runs", progress=False, max_repairs=0, token_fidelity=False)
    run_dir = run_evaluation(load_dataset(root), VariantSet(variants=[variant]), options=run_options)

    entry = load_run(run_dir).summary.variants[0]
    runtime = json.loads((run_dir / "variants.json").read_text())["variants"][0]["runtime"]
    assert (runtime["decoding"], runtime["native_tools"]) == (TOOLS_DECODING, True)
    records = {r.case_id: r for r in read_records(run_dir)}
    assert set(records) == {"oslo", "joke"}
    answered = {body["messages"][-1]["content"]: (body, answer) for body, answer in exchanges}
    for case_id, text, gold in CASES:
        body, answer = answered[text]
        assert (body["tools"], body["tool_choice"]) == (TOOLS, "auto")  # the request went natively
        assert not {"response_format", "grammar"} & set(body)
        record = records[case_id]
        assert record.error is None
        assert record.record == _server_record(answer)  # the server's parsed call, or no call
        rescored = score_call(outputs=record.record, reference_outputs=gold, tools=TOOLS).fields["call"]
        assert record.fields == {"call": rescored.score}
    assert entry.field_accuracy == pytest.approx(sum(r.fields["call"] for r in records.values()) / 2)
