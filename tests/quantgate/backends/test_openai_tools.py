"""Native tools on `openai:` variants (`native_tools = true`), without a model: a small local server
that records each Chat Completions request and answers with scripted `message.tool_calls`, as an
OpenAI-compatible server's tool-call parser returns them. The calls are read back into the task's
record and scored by the same scorer as every other tool-calling answer."""

import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from evaluators.task_models import ToolCallingTask
from graphs.extraction import graph
from graphs.prompting import NATIVE_TOOL_INSTRUCTION, NO_TOOL_ANSWER
from graphs.streamed import ModelCallError
from quantgate.backends import BackendError, open_variant
from quantgate.backends._extraction_context import case_context
from quantgate.backends._native_tools import MALFORMED_CALL
from quantgate.backends.openai._openai_tools import PROBE_TOOL, TOOLS_DECODING
from quantgate.cli._main import main
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._store import read_records
from tests.quantgate.backends.tool_task import CASES as TASK_CASES
from tests.quantgate.backends.tool_task import EXAMPLES, TOOLS

CASES = [
    *TASK_CASES,
    ("yen", "How much is 5 EUR in yen?",
     {"call": {"name": "convert_currency", "arguments": {"amount": 5, "to": "JPY"}}}),
]  # fmt: skip


def _call(name: str, arguments: Any) -> dict[str, Any]:
    """A call as the OpenAI API returns it: the arguments a JSON string (or a given text as is)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"name": name, "arguments": text}


RULES: dict[str, list[dict[str, Any]]] = {
    "f16": [
        {"when": "Oslo", "calls": [_call("get_weather", {"city": "Oslo"})]},
        {"when": "Paris", "calls": [_call("get_forecast", {"city": "Paris"})]},  # not a declared tool
        {"when": "EUR in dollars", "calls": [_call("convert_currency", "ten euros")]},  # not JSON
        {"when": "yen", "status": 500},
    ],
    "q4": [
        {"when": "Oslo", "calls": [_call("get_weather", {"city": "Bergen"})]},
        {"when": "Paris", "calls": [_call("get_weather", {"city": "Paris"})]},
        {"when": "EUR in dollars", "calls": [_call("convert_currency", {"amount": 10, "to": "USD"})]},
        {"when": "yen", "calls": [_call("convert_currency", [5, "JPY"])]},  # JSON, not an object
        {"when": "cats", "content": "Why did the cat sit on the computer? To keep an eye on the mouse."},
    ],
}


@dataclass
class ToolServer:
    """The recording server: its URL, the rules per model, the request bodies it received."""

    url: str = ""
    rules: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: dict(RULES))
    refuse_tools: bool = False
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.refuse_tools and "tools" in body:
            return 400, {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice'}}
        asked = str(body["messages"][-1].get("content"))
        rule = next((r for r in self.rules.get(body["model"], []) if r["when"] in asked), {})
        if "status" in rule:
            return rule["status"], {"error": {"message": "the model crashed"}}
        calls = [
            {"id": f"call_{i}", "type": "function", "function": call}
            for i, call in enumerate(rule.get("calls", []))
        ]
        message = {"role": "assistant", "content": rule.get("content", "No." if not calls else None)}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        usage = {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47}
        return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [choice], "usage": usage}  # fmt: skip


@pytest.fixture
def tool_server() -> Iterator[ToolServer]:
    served = ToolServer()

    class Chat(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            served.bodies.append(body)
            self.reply(*served.answer(body))

        def do_GET(self) -> None:
            found = self.path == "/v1/models"
            self.reply(200 if found else 404, {"data": [{"id": m} for m in RULES]} if found else {})

        def reply(self, status: int, answer: dict[str, Any]) -> None:
            content = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield served
    server.shutdown()
    server.server_close()
    thread.join()


def _dataset(root, tools=TOOLS, cases=CASES, **task):
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", "tools": tools, **task}))
    lines = [{"id": i, "text": t, "expected": e} for i, t, e in cases]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if task.get("calls") != "many":
        (root / "examples.jsonl").write_text("".join(json.dumps(example) + "\n" for example in EXAMPLES))
    return root


def _variant(server: ToolServer, model: str = "f16", **options: Any) -> Variant:
    options = {
        "base_url": server.url,
        "native_tools": True,
        "retry_backoff_s": 0,
        "max_retries": 0,
        **options,
    }
    return Variant(name=model, backend="openai", model=model, options=options)


@pytest.mark.slow
def test_a_tool_calling_run_sends_the_tools_and_scores_the_server_s_calls(tool_server, tmp_path, capsys):
    root = _dataset(tmp_path / "tiny-tools")
    variants = tmp_path / "variants.toml"
    variants.write_text(
        "".join(
            f'[[variants]]\nname = "{name}"\nbackend = "openai"\nmodel = "{name}"\n'
            f'options = {{ base_url = "{tool_server.url}", native_tools = true, retry_backoff_s = 0, '
            "max_retries = 0 }\n\n"
            for name in ("f16", "q4")
        )
    )
    args = ["run", "--dataset", str(root), "--variants", str(variants), "--out", str(tmp_path / "runs")]
    main([*args, "--json", "--no-token-fidelity", "--max-repairs", "0"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    summary = json.loads(out)
    run_dir = tmp_path / "runs" / summary["run_id"]
    records = {(r.variant, r.case_id): r for r in read_records(run_dir)}

    oslo, joke, paris, eur, yen = (records["f16", case] for case, _, _ in CASES)
    assert (oslo.record, oslo.valid, oslo.fields) == (CASES[0][2], True, {"call": 1.0})
    assert (joke.raw, joke.valid, joke.fields) == ('{"call": null}', True, {"call": 1.0})  # content: no call
    assert paris.record == {"call": {"name": "get_forecast", "arguments": {"city": "Paris"}}}  # undeclared
    assert (paris.valid, paris.error_kind, paris.fields) == (False, "invalid_output", {"call": 0.0})
    assert (eur.valid, eur.record, eur.error_kind) == (False, None, "invalid_output")
    assert eur.raw is not None
    assert eur.raw.startswith(
        f"{MALFORMED_CALL}: Function convert_currency arguments: ten euros are not valid JSON"
    )
    assert (yen.valid, yen.error_kind) == (False, "server_error")  # a 500: the case fails by its kind
    assert yen.error is not None
    assert "the model crashed" in yen.error
    q4 = {case: records["q4", case] for case, _, _ in CASES}
    assert [q4[case].fields["call"] for case, _, _ in CASES[:4]] == [0.0, 1.0, 1.0, 1.0]  # Bergen for Oslo
    assert q4["yen"].raw is not None
    assert q4["yen"].raw.startswith(f"{MALFORMED_CALL}: 1 validation error")  # arguments [5, "JPY"]
    assert q4["yen"].error_kind == "invalid_output"

    f16, q4_entry = summary["variants"]
    assert f16["errors_by_kind"] == {"invalid_output": 2, "server_error": 1}
    assert q4_entry["field_accuracy"] == pytest.approx(3 / 5)
    runtime = [v["runtime"] for v in json.loads((run_dir / "variants.json").read_text())["variants"]]
    assert [(r["decoding"], r["native_tools"], r["response_format"]) for r in runtime] == [
        (TOOLS_DECODING, True, "none")
    ] * 2
    for body in tool_server.bodies:
        assert (body["tools"], body["tool_choice"]) == (
            TOOLS,
            "auto",
        )  # the task's tools, as task.json has them
        assert not {"response_format", "grammar", "json_schema"} & set(body)  # no grammar with tools
        assert not body.get("stream")  # the answer comes whole
        assert body["temperature"] == 0.0
    _assert_tool_prompt(tool_server.bodies[-1]["messages"])


def _assert_tool_prompt(messages):
    """The prompt asks for a tool call (no JSON) and shows the examples' calls as the assistant's
    `tool_calls`, in the OpenAI format (arguments a JSON string), the example without a call as a
    plain answer."""
    system, rome, rome_call, song, song_answer = messages[:5]
    assert system == {"role": "system", "content": NATIVE_TOOL_INSTRUCTION}
    assert rome == {"role": "user", "content": "Weather in Rome?"}
    assert [c["function"] for c in rome_call["tool_calls"]] == [_call("get_weather", {"city": "Rome"})]
    assert rome_call["content"] == ""  # not null, which llama-cpp-python's server refuses
    assert (rome_call["role"], song["content"]) == ("assistant", "Sing me a song.")
    assert song_answer == {"role": "assistant", "content": NO_TOOL_ANSWER}


def _record(opened, text: str) -> Any:
    return json.loads(opened.chat_model.invoke([HumanMessage(text)]).content)


def test_several_calls_make_the_calls_record_of_a_task_of_several_calls(tool_server, tmp_path):
    both = [_call("get_weather", {"city": "Oslo"}), _call("convert_currency", {"amount": 2, "to": "NOK"})]
    tool_server.rules = {"f16": [{"when": "both", "calls": both}, {"when": "one", "calls": both[:1]}]}
    many = load_dataset(_dataset(tmp_path / "many", cases=[("c", "t", {"calls": []})], calls="many"))
    with open_variant(_variant(tool_server), many.schema) as opened:
        assert _record(opened, "both") == {"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}},
            {"name": "convert_currency", "arguments": {"amount": 2, "to": "NOK"}}]}  # fmt: skip
        assert _record(opened, "one") == {"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
        assert _record(opened, "nothing") == {"calls": []}
    one = load_dataset(_dataset(tmp_path / "one", cases=[("c", "t", {"call": None})]))
    with open_variant(_variant(tool_server), one.schema) as opened:  # the task asks for one call
        assert _record(opened, "both") == {"call": [{"name": "get_weather", "arguments": {"city": "Oslo"}},
            {"name": "convert_currency", "arguments": {"amount": 2, "to": "NOK"}}]}  # fmt: skip


def test_a_case_s_own_tools_go_as_its_request_s_tools(tool_server, tmp_path):
    root = tmp_path / "own-tools"
    _dataset(root, tools=TOOLS[:1], cases=[])
    oslo, eur = ({"id": i, "text": t, "expected": e} for i, t, e in (CASES[0], CASES[3]))
    (root / "cases.jsonl").write_text(
        json.dumps(oslo) + "\n" + json.dumps({**eur, "tools": TOOLS[1:]}) + "\n"
    )
    dataset = load_dataset(root)
    with open_variant(_variant(tool_server, "q4"), dataset.schema) as opened:
        assert opened.native_tools
        context = extraction_context(dataset, opened, RunOptions(max_repairs=0))
        results = {
            case.id: graph.invoke({"text": case.text}, context=case_context(context, dataset, case.id))
            for case in dataset.cases
        }
    assert (results["eur"]["record"], results["eur"]["valid"]) == (CASES[3][2], True)
    sent = {body["messages"][-1]["content"]: body["tools"] for body in tool_server.bodies[-2:]}
    assert sent == {CASES[0][1]: TOOLS[:1], CASES[3][1]: TOOLS}


def test_a_server_refusing_tools_fails_the_variant_at_open_saying_what_to_do(tool_server, tmp_path):
    tool_server.refuse_tools = True
    dataset = load_dataset(_dataset(tmp_path / "tools"))
    refused = r"refused a call with tools .*enable-auto-tool-choice.*chatml-function-calling"
    with pytest.raises(BackendError, match=refused), open_variant(_variant(tool_server), dataset.schema):
        pass


def test_a_schema_offering_no_tool_opens_natively_probing_with_a_stand_in_tool(tool_server):
    """task.json `"tools": []` (cases bring their own): a variant opened for the task's own record
    schema opens with native tools as any tool-calling task, its probe offering a stand-in tool, so
    that a server refusing tools is found at open."""
    schema = ToolCallingTask.model_validate({"tools": []}).record_schema()
    with open_variant(_variant(tool_server), schema) as opened:
        assert (opened.native_tools, opened.runtime["decoding"]) == (True, TOOLS_DECODING)
    assert (tool_server.bodies[0]["tools"], tool_server.bodies[0]["max_tokens"]) == ([PROBE_TOOL], 1)
    tool_server.refuse_tools = True
    refused = r"refused a call with tools .*enable-auto-tool-choice"
    with pytest.raises(BackendError, match=refused), open_variant(_variant(tool_server), schema):
        pass


@pytest.mark.parametrize(
    ("options", "schema", "message"),
    [
        ({"api": "completions"}, None,
         r'variant f16: native_tools .* /v1/completions has not: use api = "chat"'),
        ({}, {"type": "object", "properties": {"city": {"type": "string"}}},
         r"variant f16: native_tools is for a tool-calling task .* not tool calling: remove native_tools"),
    ],
)  # fmt: skip
def test_native_tools_are_refused_where_they_cannot_go(tool_server, tmp_path, options, schema, message):
    schema = schema or load_dataset(_dataset(tmp_path / "tools")).schema
    with pytest.raises(BackendError, match=message), open_variant(_variant(tool_server, **options), schema):
        pass
    assert tool_server.bodies == []  # refused before any call


def test_without_the_option_a_tool_calling_task_goes_with_its_schema_as_before(tool_server, tmp_path):
    dataset = load_dataset(_dataset(tmp_path / "tools"))
    with open_variant(_variant(tool_server, native_tools=False), dataset.schema) as opened:
        assert not opened.native_tools
        assert opened.runtime["response_format"] == "json_schema"
    assert "tools" not in tool_server.bodies[0]
    assert tool_server.bodies[0]["response_format"]["json_schema"]["schema"] == dataset.schema


def test_a_server_error_on_a_case_is_a_failed_call_of_its_kind(tool_server, tmp_path):
    dataset = load_dataset(_dataset(tmp_path / "tools"))
    with (
        open_variant(_variant(tool_server), dataset.schema) as opened,
        pytest.raises(ModelCallError) as failed,
    ):
        opened.chat_model.invoke([HumanMessage("How much is 5 EUR in yen?")])
    assert (failed.value.kind, failed.value.retryable) == ("server_error", True)
