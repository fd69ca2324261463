"""The bounded load loop and `run_load_test` with fake streaming chat models (no real model)."""

import json
import time

import pytest
from langchain_core.messages import BaseMessage
from pydantic import Field

from quantgate.cli._main import main
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.loadtest._level_specs import LoadLevel, parse_levels
from quantgate.loadtest._levels import LoadOptions, send_requests
from quantgate.loadtest._loadtest_run import run_load_test
from quantgate.render._load_table import render_load
from quantgate.rundir._store import load_run
from tests.fakes import SleepyChatModel

PROMPTS: list[tuple[str, list[BaseMessage]]] = [("c0", []), ("c1", [])]


def every_case(model):
    """The same chat model for every case."""
    return lambda case_id: model


def always_valid(case_id, raw):
    return True


def test_parse_levels_named_and_plain():
    assert parse_levels("normal=1,peak=4") == (
        LoadLevel(name="normal", concurrency=1),
        LoadLevel(name="peak", concurrency=4),
    )
    assert [lv.name for lv in parse_levels("1, 4,8")] == ["1", "4", "8"]
    for bad in ("0", "peak=x", "a=1,a=2", ""):
        with pytest.raises(ValueError, match="concurrency level"):
            parse_levels(bad)


def test_options_default_to_a_request_count_and_refuse_unbounded_values():
    assert LoadOptions().requests == 8
    assert LoadOptions(duration_s=1.0).requests is None
    with pytest.raises(ValueError, match="--requests"):
        LoadOptions(requests=0)


def test_stops_at_the_request_count():
    model = SleepyChatModel(delay_s=0.001)
    done, _ = send_requests([every_case(model)], PROMPTS, level=LoadLevel(name="p", concurrency=3),
                            check=always_valid, requests=7, duration_s=None)  # fmt: skip
    assert len(done) == 7
    assert sorted(r.case_id for r in done) == ["c0"] * 4 + ["c1"] * 3  # round-robin over the prompts
    assert {r.slot for r in done} <= {0, 1, 2}


def test_stops_at_the_duration():
    model = SleepyChatModel(delay_s=0.02)  # about 0.08 s per request
    started = time.perf_counter()
    done, wall = send_requests([every_case(model)], PROMPTS, level=LoadLevel(name="p", concurrency=2),
                               check=always_valid, requests=None, duration_s=0.3)  # fmt: skip
    elapsed = time.perf_counter() - started
    assert 0.3 <= elapsed < 0.6  # requests in flight at the deadline finish, none starts after it
    assert 2 <= len(done) <= 12
    assert all(r.started_s < 0.3 for r in done)
    assert wall == pytest.approx(elapsed, abs=0.05)


def test_errors_are_counted_by_kind_never_retried():
    busy = SleepyChatModel(delay_s=0.05, limit=1)
    level = LoadLevel(name="p", concurrency=3)
    done, _ = send_requests(
        [every_case(busy)],
        PROMPTS,
        level=level,
        check=lambda case_id, raw: False,
        requests=6,
        duration_s=None,
    )
    kinds = [r.error_kind for r in done]
    assert len(done) == 6  # each refusal is one request: no retry
    assert kinds.count("busy") >= 1
    assert kinds.count("invalid_output") >= 1
    assert set(kinds) <= {"busy", "invalid_output"}
    refused = next(r for r in done if r.error_kind == "busy")
    assert (refused.ttft_s, refused.output_tokens, refused.valid) == (None, None, None)
    answered = next(r for r in done if r.error_kind == "invalid_output")
    assert answered.ttft_s is not None
    assert answered.output_tokens == 4
    assert answered.valid is False


def test_concurrency_really_overlaps():
    model = SleepyChatModel(delay_s=0.03)  # 0.12 s per request
    _, one = send_requests([every_case(model)], PROMPTS, level=LoadLevel(name="1", concurrency=1),
                           check=always_valid, requests=8, duration_s=None)  # fmt: skip
    _, four = send_requests([every_case(model)], PROMPTS, level=LoadLevel(name="4", concurrency=4),
                            check=always_valid, requests=8, duration_s=None)  # fmt: skip
    assert four < one / 2.5


def test_run_load_writes_records_and_the_summary_section(dataset, tmp_path, capsys):
    ok = Variant.from_chat_model("ok", SleepyChatModel(delay_s=0.005))
    crowded = Variant.from_chat_model("crowded", SleepyChatModel(delay_s=0.03, limit=1))
    options = LoadOptions(levels=parse_levels("normal=1,peak=3"), requests=6)
    run_dir = run_load_test(dataset, VariantSet(variants=[ok, crowded]), options=options, out=tmp_path)
    section = load_run(run_dir).summary.load
    assert section is not None
    records = [json.loads(line) for line in (run_dir / "load.jsonl").open()]
    assert len(records) == 2 * 2 * 6
    for variant, delay in zip(section.variants, (0.005, 0.03), strict=True):
        assert variant.status == "ok"
        assert variant.instances == 1
        # warmed up before the first level (one first token, the fake's delay), not a request
        assert variant.warm_up_first_token_s is not None
        assert delay <= variant.warm_up_first_token_s < delay + 1.0
        for level in variant.levels:
            mine = [r for r in records if r["variant"] == variant.name and r["level"] == level.name]
            assert level.requests == len(mine) == 6
            assert level.errors == sum(r["error_kind"] is not None for r in mine)
            assert level.rss_peak_mb is not None
            assert level.rss_peak_mb > 0
    normal, peak = section.variants[1].levels
    assert normal.errors_by_kind == {}
    assert peak.errors_by_kind["busy"] > 0
    assert section.variants[0].levels[1].errors == 0
    table = render_load(section)
    assert "busy" in table
    assert "crowded" in table


def test_quantgate_load_without_a_server_reports_the_variant_skipped(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")  # nothing listens on the discard port
    args = ["load", "--dataset", "tech-config", "--variants", "ollama:none:1b", "--requests", "1",
            "--concurrency", "normal=1", "--out", str(tmp_path), "--json"]  # fmt: skip
    assert main(args) == 0
    section = json.loads(capsys.readouterr().out)
    assert section["requests_per_level"] == 1
    assert section["levels"] == [
        {"name": "normal", "concurrency": 1, "arrivals": "closed", "rate_per_s": None}
    ]
    (variant,) = section["variants"]
    assert variant["status"] == "skipped"
    assert "not reachable" in variant["error"]
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["load"] == section


def test_both_bounds_missing_is_refused():
    with pytest.raises(ValueError, match="request count or a duration"):
        send_requests([every_case(SleepyChatModel())], PROMPTS, level=LoadLevel(name="1", concurrency=1),
                      check=always_valid, requests=None, duration_s=None)  # fmt: skip


def test_load_added_to_an_evaluated_run_keeps_its_summary_and_shows_in_the_report(dataset, tmp_path):
    from quantgate.analysis._report import write_report
    from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation

    variant_set = VariantSet(variants=[Variant.from_chat_model("v1", SleepyChatModel(delay_s=0.001))])
    options = RunOptions(out=tmp_path, progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, variant_set, options=options)
    before = load_run(run_dir).summary
    run_load_test(
        dataset, variant_set, options=LoadOptions(levels=parse_levels("2"), requests=3), run_dir=run_dir
    )
    after = load_run(run_dir).summary
    assert before.load is None
    assert after.model_copy(update={"load": None}) == before  # all but the load section is as it was
    assert after.load is not None
    assert after.load.variants[0].levels[0].requests == 3
    page = write_report(run_dir).read_text()
    assert '<h2 id="load">Load</h2>' in page
    table = page.split('<h2 id="load">Load</h2>', 1)[1].split("</table>", 1)[0]
    assert "<td>v1</td><td>2</td>" in table


def test_run_with_load_adds_the_load_to_the_same_run(dataset, tmp_path, monkeypatch, capsys):
    import quantgate.inputs._shorthands

    fake = VariantSet(variants=[Variant.from_chat_model("v1", SleepyChatModel(delay_s=0.001))])
    monkeypatch.setattr(quantgate.inputs._shorthands, "resolve_variants", lambda specs: fake)
    runs = tmp_path / "runs"
    args = ["run", "--dataset", str(dataset.path), "--variants", "fake", "--out", str(runs), "--no-report",
            "--no-token-fidelity", "--load", "--load-concurrency", "1,2", "--requests", "2"]  # fmt: skip
    assert main(args) == 4  # the only variant is the reference, and it passes: keep it
    out = capsys.readouterr().out
    (run_dir,) = runs.iterdir()
    summary = load_run(run_dir).summary
    assert summary.variants[0].name == "v1"  # the evaluation
    assert summary.load is not None
    assert [lv.name for lv in summary.load.variants[0].levels] == ["1", "2"]
    assert len((run_dir / "load.jsonl").read_text().splitlines()) == 4
    assert "tok/s all" in out


def test_instances_are_one_per_request_in_flight_capped_by_memory(
    dataset, tmp_path, monkeypatch, register_backend
):
    from collections import namedtuple
    from contextlib import contextmanager

    import psutil

    import quantgate.loadtest._levels
    from quantgate.backends import BackendCapabilities, OpenedVariant
    from quantgate.loadtest._levels import LoadJob, load_variant

    opened = []

    @contextmanager
    def fake_open(variant, schema, *, slots=None):
        opened.append(variant.options["max_tokens"])
        yield OpenedVariant(chat_model=SleepyChatModel(delay_s=0.001))

    register_backend("copies", fake_open, capabilities=BackendCapabilities(parallel="instances"))

    readings = iter([1000.0, 1100.0])  # before and after loading the first instance: 100 MiB each
    monkeypatch.setattr(quantgate.loadtest._levels, "open_variant", fake_open)
    monkeypatch.setattr(quantgate.loadtest._levels, "rss_mb", lambda: next(readings, 1400.0))
    memory = namedtuple("memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: memory(available=300 * 2**20))
    variant = Variant(name="q4", backend="copies", model="q4.gguf")
    options = LoadOptions(levels=parse_levels("normal=1,peak=4"), requests=4, max_tokens=32)
    job = LoadJob(variant=variant, dataset=dataset, cases=tuple(dataset.cases), options=options,
                  records_path=tmp_path / "load.jsonl")  # fmt: skip
    entry = load_variant(job)
    assert opened == [32, 32, 32]  # 80% of 300 MiB leaves room for 2 more of 100 MiB
    assert entry.instances == 3
    assert entry.instance_model_mb == 100.0
    assert entry.capped is not None
    assert "opened 3" in entry.capped
    assert [lv.instances for lv in entry.levels] == [1, 3]
    assert entry.memory_process == "quantgate"
    assert entry.levels[1].requests == 4
    assert entry.levels[1].errors == 0


def test_embedded_levels_are_slots_of_one_copy(dataset, tmp_path, monkeypatch):
    from contextlib import contextmanager

    import quantgate.loadtest._levels
    from quantgate.backends import OpenedVariant
    from quantgate.loadtest._levels import LoadJob, load_variant

    opened = []

    @contextmanager
    def fake_open(variant, schema, *, slots=None):
        opened.append(slots)
        # long enough that the 4 threads of the peak level each take a request, even on a busy machine
        yield OpenedVariant(chat_model=SleepyChatModel(delay_s=0.2))

    monkeypatch.setattr(quantgate.loadtest._levels, "open_variant", fake_open)
    variant = Variant(name="q4", backend="llamacpp", model="q4.gguf")
    options = LoadOptions(levels=parse_levels("normal=1,peak=4"), requests=4)
    job = LoadJob(variant=variant, dataset=dataset, cases=tuple(dataset.cases), options=options,
                  records_path=tmp_path / "load.jsonl")  # fmt: skip
    entry = load_variant(job)
    assert opened == [4]  # one copy, as many slots as the largest level
    assert (entry.instances, entry.slots, entry.instance_model_mb) == (1, 4, None)
    assert [lv.instances for lv in entry.levels] == [1, 1]
    assert {line["slot"] for line in map(json.loads, (tmp_path / "load.jsonl").open())} == {0, 1, 2, 3}


class CountingChatModel(SleepyChatModel):
    """A SleepyChatModel that counts the chunks its callers read (4 per whole answer)."""

    read: list[int] = Field(default_factory=list)

    def _answer(self, messages):
        for chunk in super()._answer(messages):
            self.read.append(1)
            yield chunk


def test_the_warm_up_answer_is_read_to_its_end_before_the_first_level(dataset, tmp_path):
    model = CountingChatModel(delay_s=0.001)
    options = LoadOptions(levels=parse_levels("normal=1,peak=2"), requests=3)
    run_dir = run_load_test(
        dataset, [Variant.from_chat_model("counted", model)], options=options, out=tmp_path
    )
    section = load_run(run_dir).summary.load
    assert section is not None
    assert sum(level.requests for level in section.variants[0].levels) == 6
    # 6 requests of 4 chunks each, and the warm-up's 4: a server is at rest when the first level
    # starts (dropped after its first chunk, the warm-up would have read 1)
    assert len(model.read) == 6 * 4 + 4
