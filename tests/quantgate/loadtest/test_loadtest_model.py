"""`quantgate load` on the real embedded model and over Ollama's protocol against the TEST DOUBLE."""

import json
from collections import Counter

import pytest

from quantgate.cli._main import main

pytestmark = [pytest.mark.model, pytest.mark.slow]


def load_cli(tmp_path, capsys, variants, levels):
    args = ["load", "--dataset", "tech-config", "--limit", "2", "--variants", *variants,
            "--concurrency", levels, "--requests", "4", "--max-tokens", "64",
            "--out", str(tmp_path), "--json"]  # fmt: skip
    assert main(args) == 0
    section = json.loads(capsys.readouterr().out)
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["load"] == section
    records = [json.loads(line) for line in (run_dir / "load.jsonl").open()]
    return section, records


def assert_records_agree(variant, records):
    for level in variant["levels"]:
        mine = [r for r in records if r["variant"] == variant["name"] and r["level"] == level["name"]]
        assert level["requests"] == len(mine) == 4
        kinds = Counter(r["error_kind"] for r in mine if r["error_kind"] is not None)
        assert level["errors_by_kind"] == dict(kinds)
        assert level["answered"] == sum(r["error_kind"] in (None, "invalid_output") for r in mine)
        assert {r["slot"] for r in mine} <= set(range(level["concurrency"]))


def test_load_on_the_embedded_model_decodes_the_levels_as_slots_of_one_copy(ladder, tmp_path, capsys):
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    section, records = load_cli(tmp_path, capsys, [f"llamacpp:{q4.model}"], "normal=1,peak=2")
    (variant,) = section["variants"]
    assert variant["status"] == "ok"
    assert (variant["instances"], variant["slots"]) == (1, 2)
    assert variant["runtime"]["slots"] == 2
    assert variant["memory_process"] == "quantgate"
    normal, peak = variant["levels"]
    assert (normal["instances"], peak["instances"]) == (1, 1)
    for level in (normal, peak):
        assert level["answered"] == 4
        assert level["ttft_s_p50"] > 0
        assert level["ttft_s_p99"] >= level["ttft_s_p50"]
        assert level["inter_token_s_mean"] > 0
        assert level["aggregate_tokens_per_s"] > 0
        assert level["requests_per_s"] > 0
        assert level["rss_peak_mb"] > variant["rss_after_open_mb"] * 0.9  # the copy stays resident
    assert_records_agree(variant, records)


def test_load_over_ollama_counts_busy_refusals(ollama_double, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_double.url.removeprefix("http://"))
    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "1")  # what this server is told to allow, recorded
    ollama_double.faults(max_queue=0)  # as OLLAMA_MAX_QUEUE=0: one served, none waiting
    try:
        section, records = load_cli(tmp_path, capsys, ["ollama:gemma3:270m-q4_K_M"], "normal=1,peak=3")
    finally:
        ollama_double.faults(max_queue=512)
    (variant,) = section["variants"]
    assert variant["status"] == "ok"
    assert variant["instances"] == 1
    assert variant["num_parallel"] == "1"
    assert variant["memory_process"].startswith("server pid")
    normal, peak = variant["levels"]
    assert normal["errors_by_kind"].get("busy") is None
    assert normal["answered"] == 4
    assert normal["ttft_s_p50"] > 0
    assert peak["errors_by_kind"]["busy"] > 0  # 3 at once against a server that takes 1
    assert peak["answered"] >= 1
    assert peak["rss_peak_mb"] > 100  # the server process, sampled during the level
    assert_records_agree(variant, records)
