"""Tool calling over Ollama variants: the task's tools sent as `/api/chat`'s `tools` (no `format`),
answered by the TEST DOUBLE's scripted tool calls, read back into the task's record and scored."""

import json

import httpx
import pytest

from graphs.extraction import graph
from graphs.prompting import NATIVE_TOOL_INSTRUCTION, NO_TOOL_ANSWER
from quantgate.backends._extraction_context import case_context
from quantgate.backends._native_tools import MALFORMED_CALL
from quantgate.backends.ollama._ollama import open_ollama
from quantgate.backends.ollama._ollama_tools import TOOLS_DECODING
from quantgate.cli._main import main
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.scheduler._warm_up import WARM_UP_TEXT
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._store import read_records
from tests.quantgate.backends.tool_task import CASES, EXAMPLES, TOOLS

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _call(name, arguments):
    return [{"function": {"name": name, "arguments": arguments}}]


RULES = {
    "gemma3:270m-f16": [
        {"when": "Oslo", "tool_calls": _call("get_weather", {"city": "Oslo"})},
        {"when": "Paris", "tool_calls": _call("get_forecast", {"city": "Paris"})},  # not a declared tool
        {"when": "EUR", "tool_calls": _call("convert_currency", "ten euros")},  # arguments not an object
    ],
    "gemma3:270m-q4_K_M": [
        {"when": "Oslo", "tool_calls": _call("get_weather", {"city": "Bergen"})},
        {"when": "Paris", "tool_calls": _call("get_weather", {"city": "Paris"})},
        {"when": "EUR", "tool_calls": _call("convert_currency", {"amount": 10, "to": "USD"})},
        {"when": "cats", "content": "Why did the cat sit on the computer? To keep an eye on the mouse."},
    ],
}


@pytest.fixture
def tool_double(ollama_double):
    """The double answering with `RULES`; its rules and kept requests cleared afterwards."""
    for tag, rules in RULES.items():
        httpx.post(
            f"{ollama_double.url}/_double/tool_answers", json={"model": tag, "rules": rules}
        ).raise_for_status()
    yield ollama_double
    for tag in RULES:
        httpx.post(f"{ollama_double.url}/_double/tool_answers", json={"model": tag}).raise_for_status()


@pytest.fixture
def tool_dataset(tmp_path):
    root = tmp_path / "tiny-tools"
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", "tools": TOOLS}))
    lines = [{"id": i, "text": t, "expected": e} for i, t, e in CASES]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "examples.jsonl").write_text("".join(json.dumps(example) + "\n" for example in EXAMPLES))
    return root


def test_tool_calling_run_over_two_ollama_variants(tool_double, tool_dataset, tmp_path, capsys):
    variants = tmp_path / "variants.toml"
    host = tool_double.url
    variants.write_text(
        "".join(
            f'[[variants]]\nname = "{name}"\nbackend = "ollama"\nmodel = "{tag}"\n'
            f'options = {{ host = "{host}" }}\n\n'
            for name, tag in (("f16", "gemma3:270m-f16"), ("q4", "gemma3:270m-q4_K_M"))
        )
    )
    args = [
        "run",
        "--dataset",
        str(tool_dataset),
        "--variants",
        str(variants),
        "--out",
        str(tmp_path / "runs"),
    ]
    main([*args, "--json", "--no-token-fidelity", "--max-repairs", "0"])  # the first answer is the answer
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    summary = json.loads(out)
    run_dir = tmp_path / "runs" / summary["run_id"]
    records = {(r.variant, r.case_id): r for r in read_records(run_dir)}

    oslo, joke, paris, eur = (records["f16", case] for case, _, _ in CASES)
    assert (oslo.record, oslo.valid, oslo.fields) == (CASES[0][2], True, {"call": 1.0})  # a call
    assert (joke.raw, joke.valid, joke.fields) == (
        '{"call": null}',
        True,
        {"call": 1.0},
    )  # plain text: no call
    assert (paris.valid, paris.error_kind, paris.fields) == (False, "invalid_output", {"call": 0.0})
    assert paris.record == {
        "call": {"name": "get_forecast", "arguments": {"city": "Paris"}}
    }  # an undeclared tool
    assert paris.validation_errors == [
        f"call: {paris.record['call']} is not valid under any of the given schemas"
    ]
    assert (eur.valid, eur.record, eur.fields, eur.error_kind) == (
        False,
        None,
        {"call": 0.0},
        "invalid_output",
    )
    assert eur.raw is not None
    assert eur.raw.startswith(f"{MALFORMED_CALL}: ")
    assert "ten euros" in eur.raw  # names what the server sent
    q4_scores = [records["q4", case].fields["call"] for case, _, _ in CASES]
    assert q4_scores == [0.0, 1.0, 1.0, 1.0]  # Bergen for Oslo; a joke in plain text is no call

    f16, q4 = summary["variants"]
    assert (f16["field_accuracy"], f16["format_validity"]) == (0.5, 0.5)  # 2 of 4 right, 2 invalid
    assert f16["errors_by_kind"] == {"invalid_output": 2}
    assert (q4["field_accuracy"], q4["format_validity"]) == (0.75, 1.0)
    assert f16["server_tokens_per_s"] is None  # the double generated nothing: not measured
    runtime = [v["runtime"] for v in json.loads((run_dir / "variants.json").read_text())["variants"]]
    assert [r["decoding"] for r in runtime] == [TOOLS_DECODING] * 2
    assert [r["unenforced_schema_keywords"] for r in runtime] == [None, None]

    requests = httpx.get(f"{tool_double.url}/_double/tool_requests").json()["requests"]
    assert {r["model"] for r in requests} == set(RULES)
    for body in requests:
        assert body["tools"] == TOOLS  # the task's tools, as task.json holds them
        assert body.get("format") is None  # no grammar with tools
        assert body["options"]["temperature"] == 0.0
        _assert_tool_prompt(body["messages"])


def _assert_tool_prompt(messages):
    """The prompt of a chat sent with tools: asks for a tool call (no JSON), and shows the examples'
    calls as the assistant's `tool_calls` (and the example without a call as a plain answer), as the
    `ollama` client sends them: empty content left out, a call's id and type dropped."""
    system, rome, rome_call, song, song_answer = messages[:5]
    assert system == {"role": "system", "content": NATIVE_TOOL_INSTRUCTION}
    assert "JSON" not in system["content"]
    assert rome == {"role": "user", "content": "Weather in Rome?"}
    assert song == {"role": "user", "content": "Sing me a song."}
    assert rome_call == {"role": "assistant", "tool_calls": _call("get_weather", {"city": "Rome"})}
    assert song_answer == {"role": "assistant", "content": NO_TOOL_ANSWER}
    assert messages[5]["role"] == "user"
    assert messages[5]["content"] in [WARM_UP_TEXT, *(text for _, text, _ in CASES)]  # the warm-up, or a case


def test_the_double_refuses_a_chat_whose_tool_call_arguments_are_not_an_object(tool_double):
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "tool_calls": _call("get_weather", "Oslo")},  # Ollama decodes an object only
    ]
    body = {"model": "gemma3:270m-f16", "messages": messages, "tools": TOOLS, "stream": False}
    response = httpx.post(f"{tool_double.url}/api/chat", json=body, timeout=120)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "messages[1].tool_calls[0].function.arguments: cannot unmarshal str into an object of arguments"
    )
    called = {"role": "assistant", "tool_calls": _call("get_weather", {"city": "Oslo"})}
    fine = {**body, "messages": [messages[0], called]}
    assert httpx.post(f"{tool_double.url}/api/chat", json=fine, timeout=120).status_code == 200


def test_a_native_repair_sends_the_call_back_as_a_tool_call(tool_double, tool_dataset):
    """A repair over native tools: the invalid call goes back as the assistant's call, answered by a
    tool message naming the error (Paris: an undeclared tool); an unreadable call (EUR) as its text,
    with a user turn."""
    dataset = load_dataset(tool_dataset)
    host = {"host": tool_double.url}
    variant = Variant(name="f16", backend="ollama", model="gemma3:270m-f16", options=host)
    with open_ollama(variant, dataset.schema) as opened:
        assert opened.native_tools
        context = extraction_context(dataset, opened, RunOptions(max_repairs=1))
        paris = graph.invoke({"text": "Will it rain in Paris?"}, context=context)
        eur = graph.invoke({"text": "How much is 10 EUR in dollars?"}, context=context)
    assert (len(paris["attempts"]), paris["valid"]) == (2, False)  # the same undeclared tool again
    assert (len(eur["attempts"]), eur["valid"]) == (2, True)  # the double answers the repair without a call
    requests = httpx.get(f"{tool_double.url}/_double/tool_requests").json()["requests"]
    first, repaired, _, eur_repaired = (body["messages"] for body in requests[-4:])
    called, told = repaired[len(first) :]
    assert called == {"role": "assistant", "tool_calls": _call("get_forecast", {"city": "Paris"})}
    assert told["role"] == "tool"
    assert told["content"].startswith("The tool call is invalid: call: ")
    unread, said = eur_repaired[len(first) :]
    assert unread["role"] == "assistant"
    assert unread["content"].startswith(MALFORMED_CALL)
    assert said == {"role": "user", "content": said["content"]}
    assert said["content"].startswith("The answer is invalid: ")


def test_a_case_s_own_tools_go_as_its_request_s_tools(tool_double, tmp_path):
    """Per-case tools (docs/tasks.md): the EUR case brings the conversion tool; its chat is sent
    task.json's tool and its own, the other case's task.json's tool alone."""
    root = tmp_path / "own-tools"
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", "tools": TOOLS[:1]}))
    oslo, eur = ({"id": i, "text": t, "expected": e} for i, t, e in (CASES[0], CASES[3]))
    lines = [oslo, {**eur, "tools": TOOLS[1:]}]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    dataset = load_dataset(root)
    variant = Variant(
        name="q4", backend="ollama", model="gemma3:270m-q4_K_M", options={"host": tool_double.url}
    )
    with open_ollama(variant, dataset.schema) as opened:
        assert opened.native_tools
        context = extraction_context(dataset, opened, RunOptions(max_repairs=0))
        results = {
            case.id: graph.invoke({"text": case.text}, context=case_context(context, dataset, case.id))
            for case in dataset.cases
        }
    assert results["eur"]["record"] == CASES[3][2]
    assert results["eur"]["valid"]
    requests = httpx.get(f"{tool_double.url}/_double/tool_requests").json()["requests"]
    sent = {body["messages"][-1]["content"]: body["tools"] for body in requests[-2:]}
    assert sent == {CASES[0][1]: TOOLS[:1], CASES[3][1]: TOOLS}


def _dataset(root, task, lines, examples=()):
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", **task}))
    for name, rows in (("cases", lines), ("examples", examples)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return load_dataset(root)


def _answers(tool_double, dataset, schema=None):
    """Each case's answer through an Ollama variant opened for `schema` (default the dataset's); the
    runtime it recorded."""
    host = {"host": tool_double.url}
    variant = Variant(name="q4", backend="ollama", model="gemma3:270m-q4_K_M", options=host)
    with open_ollama(variant, dataset.schema if schema is None else schema) as opened:
        assert opened.native_tools
        context = extraction_context(dataset, opened, RunOptions(max_repairs=0))
        results = {
            case.id: graph.invoke({"text": case.text}, context=case_context(context, dataset, case.id))
            for case in dataset.cases
        }
    return results, opened.runtime


def test_a_task_of_several_calls_goes_as_tools_and_reads_back_every_call(tool_double, tmp_path):
    """`"calls": "many"` (BFCL's parallel categories): the tools go natively, no grammar, and the
    server's calls are the record's `calls`, two or none; an example's calls go as one assistant
    message's `tool_calls`."""
    both = [{"name": "get_weather", "arguments": {"city": c}} for c in ("Oslo", "Paris")]
    cases = [
        {"id": "two", "text": "Weather in Oslo and Paris?", "expected": {"calls": both}},
        {"id": "none", "text": "Tell me a joke about cats.", "expected": {"calls": []}},
    ]
    shot = [{"name": "get_weather", "arguments": {"city": c}} for c in ("Rome", "Milan")]
    examples = [{"id": "ex", "text": "Rome and Milan?", "expected": {"calls": shot}}]
    dataset = _dataset(tmp_path / "parallel", {"tools": TOOLS, "calls": "many"}, cases, examples)
    rules = [{"when": "Oslo and Paris", "tool_calls": [*_call("get_weather", {"city": "Oslo"}),
                                                      *_call("get_weather", {"city": "Paris"})]}]  # fmt: skip
    url = f"{tool_double.url}/_double/tool_answers"
    httpx.post(url, json={"model": "gemma3:270m-q4_K_M", "rules": rules}).raise_for_status()
    results, runtime = _answers(tool_double, dataset)
    assert (results["two"]["record"], results["two"]["valid"]) == ({"calls": both}, True)
    assert (results["none"]["record"], results["none"]["valid"]) == ({"calls": []}, True)
    assert (runtime["decoding"], runtime["unenforced_schema_keywords"]) == (TOOLS_DECODING, None)
    requests = httpx.get(f"{tool_double.url}/_double/tool_requests").json()["requests"][-2:]
    assert [(body["tools"], body.get("format")) for body in requests] == [(TOOLS, None)] * 2
    shown = [*_call("get_weather", {"city": "Rome"}), *_call("get_weather", {"city": "Milan"})]
    assert requests[0]["messages"][1:3] == [
        {"role": "user", "content": "Rome and Milan?"},
        {"role": "assistant", "tool_calls": shown},
    ]


def test_a_task_whose_cases_bring_all_the_tools_goes_natively(tool_double, tmp_path):
    """task.json `"tools": []`: a variant opened for the task's own record schema, which offers no
    tool (a dataset is opened for every tool its cases bring), opens with native tools as any
    tool-calling task (its runtime says so), and each case's chat carries that case's tools."""
    oslo, eur = ({"id": i, "text": t, "expected": e} for i, t, e in (CASES[0], CASES[3]))
    dataset = _dataset(
        tmp_path / "own", {"tools": []}, [{**oslo, "tools": TOOLS[:1]}, {**eur, "tools": TOOLS[1:]}]
    )
    results, runtime = _answers(tool_double, dataset, dataset.task.record_schema())
    bergen = {"call": {"name": "get_weather", "arguments": {"city": "Bergen"}}}  # q4's scripted call
    assert [(results[c]["record"], results[c]["valid"]) for c in ("oslo", "eur")] == [
        (bergen, True),
        (CASES[3][2], True),
    ]
    assert (runtime["decoding"], runtime["unenforced_schema_keywords"]) == (TOOLS_DECODING, None)
    requests = httpx.get(f"{tool_double.url}/_double/tool_requests").json()["requests"][-2:]
    sent = {body["messages"][-1]["content"]: (body["tools"], body.get("format")) for body in requests}
    assert sent == {CASES[0][1]: (TOOLS[:1], None), CASES[3][1]: (TOOLS[1:], None)}
