"""The Ollama backend over HTTP against the Ollama-protocol TEST DOUBLE (real llama.cpp inference),
so langchain-ollama's real client code runs; every failure kind is injected."""

import json

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import load_run, read_records
from quantgate.rundir._summary import VariantEntry

pytestmark = [pytest.mark.model, pytest.mark.slow]


def ollama_variant(server, tag, **options):
    return Variant(
        name=tag.replace(":", "-"), backend="ollama", model=tag, options={"host": server.url, **options}
    )


def run_one(
    server, tmp_path, tag="gemma3:270m-q4_K_M", limit=2, **options
) -> tuple[VariantEntry, list[CaseRecord]]:
    variant_set = VariantSet(variants=[ollama_variant(server, tag, **options)])
    run_dir = run_evaluation(
        load_dataset("tech-config"),
        variant_set,
        options=RunOptions(limit=limit, out=tmp_path, progress=False),
    )
    return load_run(run_dir).summary.variants[0], list(read_records(run_dir))


def test_quantgate_run_over_ollama_variants(ollama_double, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", ollama_double.url.removeprefix("http://"))
    args = ["run", "--dataset", "restaurants", "--limit", "2", "--out", str(tmp_path), "--json"]
    assert main([*args, "--variants", "ollama:gemma3:270m-f16", "ollama:gemma3:270m-q4_K_M"]) == 4  # 2 cases
    summary = json.loads(capsys.readouterr().out)
    f16, q4 = summary["variants"]
    assert [f16["status"], q4["status"]] == ["ok", "ok"]
    assert (f16["quantization"], q4["quantization"]) == ("F16", "Q4_K_M")  # from /api/show
    assert f16["format_validity"] == 1.0  # format = JSON schema, honoured by the server
    assert q4["agreement_with_reference"] is not None
    for entry in (f16, q4):
        assert entry["model_memory_mb"] > 100  # /api/ps size
        assert entry["memory_mb"] > entry["model_memory_mb"]  # server process RSS, sampled
        assert entry["memory_process"].startswith("server pid")
        assert entry["vram_mb"] == 0.0
        assert entry["ttft_s_p50"] > 0
        assert entry["server_tokens_per_s"] > 0
        assert entry["retries"] == 0
    fidelity = q4["token_fidelity"]  # from the server's top-k logprobs, along F16's outputs
    assert "Ollama" in fidelity["method"]
    assert fidelity["positions"] > 20
    assert 0 < fidelity["kld_mean"] < 0.5
    assert 0.8 < fidelity["top1_agreement"] <= 1
    records = [json.loads(line) for line in (tmp_path / summary["run_id"] / "fidelity.jsonl").open()]
    assert [r["variant"] for r in records] == [q4["name"]] * fidelity["cases"]
    klds = [k for r in records for k in r["kld"]]
    assert fidelity["kld_mean"] == pytest.approx(sum(klds) / len(klds))
    variants = json.loads((tmp_path / summary["run_id"] / "variants.json").read_text())["variants"]
    runtime = variants[1]["runtime"]
    assert runtime["name"] == "ollama"
    assert runtime["version"] == "0.0.0-quantgate-test-double"
    assert runtime["details"]["quantization_level"] == "Q4_K_M"
    assert runtime["details"]["family"] == "gemma3"
    assert len(runtime["model_digest"]) == 64
    assert runtime["cold_load_s"] > 0
    assert runtime["ps"]["context_length"] == 8192
    assert "temperature" in runtime["parameters"]


def test_timing_fields_come_from_the_server(ollama_double, tmp_path):
    entry, records = run_one(ollama_double, tmp_path)
    reported = records[0].attempt_timings[0]["reported"]
    assert reported["eval_count"] == records[0].output_tokens
    assert reported["prompt_eval_duration"] > 0
    assert reported["load_duration"] == 0  # the cold load happened before the cases
    assert entry.server_prompt_tokens_per_s is not None
    assert entry.server_prompt_tokens_per_s > 0


@pytest.mark.parametrize(
    ("fault", "kind"),
    [({"busy": 1}, "busy"), ({"error": 1}, "server_error"), ({"cut": 1}, "stream_cut")],
)
def test_transient_failures_are_retried_and_counted(ollama_double, tmp_path, fault, kind):
    ollama_double.faults(spare=1, **fault)  # the warm-up is spared: the fault meets the case
    entry, records = run_one(ollama_double, tmp_path, limit=1, retry_backoff_s=0)
    assert entry.errors == 0
    assert entry.retries == 1
    assert records[0].valid


def test_persistent_busy_is_an_error_of_its_kind_and_the_run_goes_on(ollama_double, tmp_path):
    ollama_double.faults(spare=1, busy=3)  # after the warm-up, the first case: 1 call + 2 retries
    entry, records = run_one(ollama_double, tmp_path, limit=2, retry_backoff_s=0)
    assert entry.errors_by_kind == {"busy": 1}
    assert entry.retries == 2
    assert [r.error_kind for r in records] == ["busy", None]


def test_timeout(ollama_double, tmp_path):
    # longer than the timeout, which is much longer than a cold prompt; short enough that the retry, queued
    # behind the slow request, gets its first token well within the timeout (at 60 s it took two retries
    # on a busy machine)
    ollama_double.faults(spare=1, slow=45)  # the first case's call, after the warm-up
    entry, _ = run_one(ollama_double, tmp_path, limit=1, timeout_s=30, retry_backoff_s=0)
    assert entry.retries == 1  # the retry succeeds once the slow answer is gone
    assert entry.errors == 0


def test_unknown_model_is_skipped_with_the_pull_command(ollama_double, tmp_path):
    entry, _ = run_one(ollama_double, tmp_path, tag="gemma3:12b-it-q4_K_M")
    assert entry.status == "skipped"
    assert entry.error is not None
    assert "ollama pull gemma3:12b-it-q4_K_M" in entry.error


def test_doctor_names_missing_tags_with_the_pull_command(ollama_double, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", ollama_double.url)
    assert main(["doctor", "--ollama", "gemma3:270m-q8_0", "gemma3:12b-it-q4_K_M"]) == 1
    out = capsys.readouterr().out
    assert "ok   ollama: server 0.0.0-quantgate-test-double" in out
    assert "ok   ollama:gemma3:270m-q8_0: available" in out
    assert "FAIL ollama:gemma3:12b-it-q4_K_M: not on the server; run: ollama pull gemma3:12b-it-q4_K_M" in out
    assert main(["doctor", "--ollama", "gemma3:270m-q8_0"]) == 0


def test_double_speaks_the_non_streaming_protocol_too(ollama_double):
    import httpx

    schema = {"type": "object", "properties": {"vendor": {"type": "string"}}, "required": ["vendor"]}
    body = {
        "model": "gemma3:270m-q4_K_M",
        "messages": [
            {"role": "system", "content": "Extract the vendor."},
            {"role": "user", "content": "Invoice from Globex, total 10 EUR"},
            {"role": "assistant", "content": '{"vendor": "Globex"}'},
            {"role": "user", "content": "Invoice from Acme, total 99 USD"},
        ],
        "stream": False,
        "format": schema,
        "options": {"temperature": 0, "num_predict": 100},
    }
    answer = httpx.post(f"{ollama_double.url}/api/chat", json=body, timeout=120).json()
    assert answer["done"] is True
    assert answer["message"]["role"] == "assistant"
    assert answer["done_reason"] == "stop"
    assert set(json.loads(answer["message"]["content"])) == {"vendor"}
    assert answer["eval_count"] > 0
