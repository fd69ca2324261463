"""The OpenAI-compatible backend against llama-cpp-python's REAL server (`python -m llama_cpp.server`
with the ladder's Q4_K_M), not a double: chat, streaming, JSON-schema output, concurrent calls, an
API key, a full `quantgate run`, and a server killed in the middle of a run."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest

from quantgate.backends import BackendError, open_variant
from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_decision, read_records

pytestmark = [pytest.mark.model, pytest.mark.slow]

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "stars": {"type": "integer"}, "open": {"type": "boolean"}},
    "required": ["city", "stars", "open"],
    "additionalProperties": False,
}
ASK = [("user", "Le Cirque in Paris has 4 stars and is open. Answer in JSON with city, stars, open.")]


def server_variant(server, **options):
    return Variant(
        name="served", backend="openai", model=server.model, options={"base_url": server.url, **options}
    )


def stream_timed(model):
    """The chunks of one streamed answer, each with its arrival time after the call began."""
    started, timed = time.perf_counter(), []
    for chunk in model.stream(ASK):
        timed.append((time.perf_counter() - started, chunk))
    return timed


def test_a_streamed_answer_is_json_of_the_schema_token_by_token(llama_server):
    with open_variant(server_variant(llama_server, max_tokens=64), SCHEMA) as opened:
        timed = stream_timed(opened.chat_model)
        runtime = opened.runtime
    # llama-cpp-python refuses json_schema (500, "Input should be 'text' or 'json_object'") and
    # honours json_object with a schema: the open found so with one-token calls
    assert runtime["response_format"] == "json_object"
    assert runtime["decoding"].startswith("response_format json_object")
    assert runtime["base_url"] == llama_server.url
    # the server's own record: /v1/models lists the alias; llama-cpp-python has no /props or /metrics
    assert runtime["server_models"] == [llama_server.model]
    assert runtime["model_listed"] is True
    assert runtime["props"] == runtime["metrics"] == "not offered"
    texts = [chunk.content for _, chunk in timed if chunk.content]
    assert len(texts) >= 5  # streamed, not one block
    arrivals = [at for at, chunk in timed if chunk.content]
    assert arrivals == sorted(arrivals)
    assert arrivals[-1] - arrivals[0] > 0  # inter-token gaps measurable
    message = timed[0][1]
    for _, chunk in timed[1:]:
        message += chunk
    jsonschema.validate(json.loads(message.text), SCHEMA)
    assert message.response_metadata["finish_reason"] == "stop"
    # the server sends no usage in a stream: the output tokens are its content chunks, one token each
    assert message.usage_metadata["output_tokens"] == len(texts)


def test_four_calls_at_once_are_all_answered(llama_server):
    opening = open_variant(server_variant(llama_server, max_tokens=48), SCHEMA)
    with opening as opened, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: opened.chat_model.invoke(ASK), range(4)))
    assert len(answers) == 4
    for answer in answers:
        jsonschema.validate(json.loads(answer.text), SCHEMA)


def test_an_api_key_is_read_from_the_variable_the_variant_names(ladder, monkeypatch):
    from tests.model_fixtures import LlamaCppServerProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = LlamaCppServerProcess(q4.model, api_key="right-key")
    try:
        variant = server_variant(server, api_key_env="QG_TEST_SERVER_KEY", max_tokens=32)
        monkeypatch.setenv("QG_TEST_SERVER_KEY", "right-key")
        with open_variant(variant, SCHEMA) as opened:
            jsonschema.validate(json.loads(opened.chat_model.invoke(ASK).text), SCHEMA)
            assert "right-key" not in json.dumps(opened.runtime)
        monkeypatch.setenv("QG_TEST_SERVER_KEY", "wrong-key")
        with (
            pytest.raises(BackendError, match=r"the server refused the API key \(401\)"),
            open_variant(variant, SCHEMA),
        ):
            pass
        monkeypatch.delenv("QG_TEST_SERVER_KEY")
        with (
            pytest.raises(BackendError, match=r"QG_TEST_SERVER_KEY \(its api_key_env option\) is not"),
            open_variant(variant, SCHEMA),
        ):
            pass
    finally:
        server.stop()


def test_quantgate_run_over_an_openai_variant(llama_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QG_TEST_UNUSED_KEY", "never-written")
    spec = tmp_path / "variants.toml"
    spec.write_text(
        f'[[variants]]\nname = "served"\nbackend = "openai"\nmodel = "q4_k_m"\n'
        f'options = {{ base_url = "{llama_server.url}", api_key_env = "QG_TEST_UNUSED_KEY", '
        "max_tokens = 96 }\n"
    )
    args = ["run", "--dataset", "tech-config", "--limit", "2", "--examples", "none", "--no-token-fidelity"]
    status = main(
        [*args, "--no-report", "--no-cache", "--out", str(tmp_path), "--json", "--variants", str(spec)]
    )
    # One variant, the reference: no candidate, so never 0, and 3, not 4, as the reference fails its
    # own gates. tech-config's schema requires 11 keys; the server honours json_object, not the schema,
    # and the greedy zero-shot answers write each key spaced with an invented value: at 96 tokens they
    # have reached 8 and 9 keys (tc-en-001's gold record alone is 105 tokens written compactly), so
    # both end at the output limit: valid 0 of 2 and errors 2 of 2. Greedy, with a fixed seed and one
    # request at a time, the same server gives the same answers (the noise floor finds them identical).
    assert status == 3
    summary = json.loads(capsys.readouterr().out)
    run_dir = tmp_path / summary["run_id"]
    text = (run_dir / "variants.json").read_text()
    assert "never-written" not in text
    recorded = json.loads(text)["variants"][0]
    assert recorded["options"]["base_url"] == llama_server.url
    assert recorded["options"]["api_key_env"] == "QG_TEST_UNUSED_KEY"
    assert recorded["runtime"]["response_format"] == "json_object"
    gates = {gate.gate: (gate.status, gate.value) for gate in read_decision(run_dir).variants["served"].gates}
    assert gates["min_format_validity"] == ("fail", 0.0)
    assert gates["max_error_rate"] == ("fail", 1.0)
    records = list(read_records(run_dir))
    assert len(records) == 2
    for record in records:
        assert record.error_kind == "output_limit"
        assert record.output_tokens == 96
        assert (record.ttft_s or 0) > 0
        assert (record.generation_tokens_per_s or 0) > 0
        assert record.input_tokens is None  # not reported by this server: missing, not 0


def kill_after_first_record(out: Path, server) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if any(path.stat().st_size > 0 for path in out.glob("*/records.jsonl")):
                server.process.kill()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_server_killed_mid_run_fails_the_later_cases_by_kind_and_keeps_the_earlier(ladder, tmp_path):
    from tests.model_fixtures import LlamaCppServerProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = LlamaCppServerProcess(q4.model)
    try:
        watcher = kill_after_first_record(tmp_path, server)
        variant = server_variant(server, max_tokens=96, retry_backoff_s=0)
        run_dir = run_evaluation(
            load_dataset("tech-config"),
            VariantSet(variants=[variant]),
            options=RunOptions(limit=4, out=tmp_path, progress=False, examples=None, concurrency=1),
        )
        watcher.join(timeout=5)
    finally:
        server.stop()
    records = list(read_records(run_dir))
    assert len(records) == 4  # the run went on to its end
    # the case answered before the kill is kept (an answer, perhaps one past its 96 tokens)
    assert records[0].error_kind in (None, "output_limit")
    assert records[0].raw
    kinds = [r.error_kind for r in records[1:]]
    assert set(kinds) <= {"connection", "stream_cut"}
    assert kinds[-1] == "connection"  # the server is gone: nothing listens
    entry = load_run(run_dir).summary.variants[0]
    assert entry.status == "ok"
    assert entry.errors_by_kind.get("connection", 0) + entry.errors_by_kind.get("stream_cut", 0) == 3
