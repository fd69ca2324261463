"""End-to-end runs on the real embedded ladder (Gemma 3 270M, llama.cpp in process)."""

import json
import os
from pathlib import Path

import psutil
import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._store import load_run, read_records
from tests.conftest import shared_set

pytestmark = [pytest.mark.model, pytest.mark.slow]


def assert_stopped_outputs_are_strictly_valid(run_dir):
    """Every answer that ended with `stop` (not cut at the token limit) is strictly valid: the grammar
    enforces the whole schema (issue 20). Returns how many stopped."""
    records = list(read_records(run_dir))
    assert records
    stopped = [r for r in records if r.attempt_timings and r.attempt_timings[-1]["finish_reason"] == "stop"]
    assert [(r.variant, r.case_id, r.validation_errors) for r in stopped if not r.format_valid] == []
    return len(stopped)


def only(ladder, *names):
    return VariantSet(reference=names[0], variants=[v for v in ladder.variants if v.name in names])


@pytest.fixture(scope="module")
def restaurants_at_concurrency_1(ladder, tmp_path_factory):
    """F16 and Q4_K_M on 4 cases of restaurants, one case at a time, without token fidelity: the
    concurrency test's baseline, and the uninterrupted run the kill test's first 3 cases must match."""
    options = RunOptions(
        limit=4,
        concurrency=1,
        out=tmp_path_factory.mktemp("concurrency-1"),
        progress=False,
        token_fidelity=False,
    )
    return run_evaluation(load_dataset("restaurants"), only(ladder, "F16", "Q4_K_M"), options=options)


def test_reference_and_q4_on_real_cases(ladder, tmp_path):
    dataset = load_dataset("tech-config")
    run_dir = run_evaluation(
        dataset,
        only(ladder, "F16", "Q4_K_M"),
        options=RunOptions(limit=3, out=tmp_path, progress=False, token_fidelity=False),
    )
    summary = load_run(run_dir).summary
    f16, q4 = summary.variants
    assert (f16.name, q4.name) == ("F16", "Q4_K_M")
    for entry in (f16, q4):
        assert entry.status == "ok"
        assert entry.format_validity == 1.0  # grammar-constrained decoding
        assert entry.field_accuracy is not None
        assert 0.0 < entry.field_accuracy <= 1.0
        assert entry.ttft_s_p50 is not None
        assert entry.ttft_s_p50 > 0
        assert entry.tokens_per_s is not None
        assert entry.tokens_per_s > 0
        assert entry.memory_mb is not None
        assert entry.model_memory_mb is not None
        assert entry.memory_mb > entry.model_memory_mb > 0
    assert q4.model_memory_mb is not None
    assert f16.model_memory_mb is not None
    assert q4.model_memory_mb < f16.model_memory_mb
    assert q4.file_size_mb is not None
    assert f16.file_size_mb is not None
    assert q4.file_size_mb < f16.file_size_mb
    assert q4.agreement_with_reference is not None
    assert assert_stopped_outputs_are_strictly_valid(run_dir) >= 1
    records = list(read_records(run_dir))
    assert len(records) == 6
    assert all(
        r.input_tokens is not None
        and r.input_tokens > 500
        and r.output_tokens is not None
        and r.output_tokens > 10
        for r in records
    )
    variants = json.loads((run_dir / "variants.json").read_text())["variants"]
    assert variants[0]["runtime"]["name"].startswith("llama.cpp")
    assert variants[0]["hardware"]["cpu_cores_logical"] >= 1
    physical = psutil.cpu_count(logical=False) or os.cpu_count()
    assert [v["runtime"]["n_threads"] for v in variants] == [physical, physical]  # all cores, not half
    assert [v["runtime"]["slots"] for v in variants] == [4, 4]  # the embedded default
    for entry in (f16, q4):
        assert entry.concurrency == 4
        assert entry.wall_s is not None
        assert entry.throughput_tokens_per_s is not None
        own = [r for r in records if r.variant == entry.name]
        assert entry.wall_s < sum(r.total_s or 0 for r in own)  # the 3 cases ran side by side
        tokens = sum(r.output_tokens or 0 for r in own)
        assert entry.throughput_tokens_per_s == pytest.approx(tokens / entry.wall_s)


def test_readme_run_command_smoke(ladder, tmp_path, capsys):
    variants_file = ladder_file(ladder, tmp_path)
    code = main(["run", "--variants", str(variants_file), "--limit", "1", "--out", str(tmp_path / "runs")])
    assert code == 4  # one case cannot show a quantized variant safe: keep the reference
    out = capsys.readouterr().out
    assert "F16 *" in out
    assert "Q4_K_M" in out
    assert "run directory:" in out


def ladder_file(ladder, tmp_path):
    from quantgate.inputs._variants import write_variants_file

    path = tmp_path / "variants.toml"
    write_variants_file(path, ladder)
    return path


@pytest.mark.parametrize(
    ("name", "extra"),
    [("e2e-restaurants-dev", []), ("meddocan-es-dev", ["--skip-invalid-cases", "--no-token-fidelity"])],
)
def test_shared_development_sets(ladder, tmp_path, capsys, name, extra):
    root = shared_set(name)
    variants_file = ladder_file(only(ladder, "F16", "Q4_K_M"), tmp_path)
    args = ["run", "--dataset", str(root), "--variants", str(variants_file), "--limit", "1", "--json"]
    assert main([*args, "--out", str(tmp_path / "runs"), *extra]) == 4  # one case: keep the reference
    summary = json.loads(capsys.readouterr().out)
    assert [v["status"] for v in summary["variants"]] == ["ok", "ok"]
    assert summary["dataset"]["cases"] == 1
    for entry in summary["variants"]:
        assert entry["cases"] == 1
        assert entry["field_accuracy"] is not None
        assert set(entry["fields"]) == set(json.loads((root / "schema.json").read_text())["properties"])
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert assert_stopped_outputs_are_strictly_valid(run_dir) >= 1


def test_stopped_answers_on_long_documents_are_strictly_valid(ladder, tmp_path):
    """A bundled set the tests above do not run, with nullable `format: date` fields. (`invoices` is
    left out: Gemma 3 270M repeats a line item up to the token limit there, so no answer stops.)"""
    dataset = load_dataset("long-documents")
    options = RunOptions(limit=1, out=tmp_path, progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, only(ladder, "Q4_K_M"), options=options)
    variants = json.loads((run_dir / "variants.json").read_text())["variants"]
    assert variants[0]["runtime"]["unenforced_schema_keywords"] == []  # the whole schema is enforced
    assert assert_stopped_outputs_are_strictly_valid(run_dir) >= 1


def test_readme_first_command_with_a_limit(default_ladder, tmp_path, monkeypatch, capsys):
    """`quantgate run` exactly as the README says (default ladder, default dataset), one case.

    The default ladder's directory holds the session's default ladder (hard links and its manifest),
    so the command finds it built, as on a second run; building it is tests/quantgate/ladder's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the default ladder goes here
    built = Path(default_ladder[1]).parent
    directory = tmp_path / "cache" / "quantgate" / "ladder"
    directory.mkdir(parents=True)
    for file in [*built.glob("*.gguf"), built / "ladder.json"]:
        (directory / file.name).hardlink_to(file)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "1"]) == 4  # one case: keep the reference
    out = capsys.readouterr().out
    for name in ("F16 *", "Q8_0", "Q4_K_M", "Q2_K"):
        assert name in out
    assert "Q5_K_M" not in out  # one flag away (quantgate ladder --quants), not in the default ladder
    assert "dataset restaurants (1 cases)" in out
    assert "decision: keep the reference F16" in out
    assert (tmp_path / "cache" / "quantgate" / "ladder" / "variants.toml").is_file()
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert len(list(read_records(run_dir))) == 4
    assert assert_stopped_outputs_are_strictly_valid(run_dir) >= 1


def test_concurrency_4_stays_within_the_documented_differences_from_concurrency_1(
    ladder, restaurants_at_concurrency_1, tmp_path
):
    """docs/performance.md: batching changes some greedy choices, not the figures that matter
    (measured there on tech-config; here on 4 short texts of restaurants)."""
    options = RunOptions(limit=4, concurrency=4, out=tmp_path, progress=False, token_fidelity=False)
    runs = {
        1: restaurants_at_concurrency_1,
        4: run_evaluation(load_dataset("restaurants"), only(ladder, "F16", "Q4_K_M"), options=options),
    }
    entries = {n: {e.name: e for e in load_run(d).summary.variants} for n, d in runs.items()}
    for name in ("F16", "Q4_K_M"):
        one, four = entries[1][name], entries[4][name]
        assert (one.concurrency, four.concurrency) == (1, 4)
        assert one.format_validity == four.format_validity == 1.0
        assert one.field_accuracy is not None
        assert four.field_accuracy is not None
        assert abs(one.field_accuracy - four.field_accuracy) <= 0.1  # measured: at most 0.025 over 10 cases
    runtimes = {n: json.loads((d / "variants.json").read_text())["variants"] for n, d in runs.items()}
    assert [v["runtime"]["slots"] for v in runtimes[1]] == [1, 1]
    assert [v["runtime"]["slots"] for v in runtimes[4]] == [4, 4]
    ids = {n: sorted((r.variant, r.case_id) for r in read_records(d)) for n, d in runs.items()}
    assert ids[1] == ids[4]


def test_kill_9_then_resume_with_the_real_model(ladder, restaurants_at_concurrency_1, tmp_path):
    """`kill -9` of `quantgate run` while Q4_K_M runs, then `run --resume`: every (variant, case)
    recorded once, the earlier records unchanged, Q4_K_M's outputs those of an uninterrupted run."""
    import signal
    import subprocess
    import sys
    from collections import Counter
    from contextlib import ExitStack

    from tests.quantgate.evaluate.processes import ROOT, session, wait_for

    variants_file = ladder_file(only(ladder, "F16", "Q4_K_M"), tmp_path)
    out = tmp_path / "runs"
    command = [sys.executable, "-m", "quantgate.cli._main", "run", "--dataset", "restaurants", "--limit", "3",
               "--concurrency", "1", "--variants", str(variants_file), "--out", str(out), "--json",
               "--no-report", "--token-fidelity-cases", "1"]  # fmt: skip

    def q4_records() -> int:
        found = list(out.glob("*/records.jsonl"))
        return sum('"variant":"Q4_K_M"' in line for line in found[0].read_text().splitlines()) if found else 0

    with ExitStack() as sessions:
        process = sessions.enter_context(session(command, stderr=tmp_path / "stderr.txt"))
        wait_for(lambda: q4_records() >= 1, timeout=300, what="Q4_K_M record")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    (run_dir,) = out.iterdir()
    before = (run_dir / "records.jsonl").read_bytes()
    held = Counter(r.variant for r in read_records(run_dir))
    assert held["F16"] == 3
    assert 1 <= held["Q4_K_M"] < 3  # short texts: a second case may end before the kill lands

    resume = [
        sys.executable,
        "-m",
        "quantgate.cli._main",
        "run",
        "--resume",
        str(run_dir),
        "--json",
        "--no-report",
    ]
    resumed = subprocess.run(resume, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 4, resumed.stderr  # 3 cases cannot show Q4_K_M safe: keep the reference
    assert "Traceback" not in resumed.stderr
    assert (run_dir / "records.jsonl").read_bytes().startswith(before.rpartition(b"\n")[0])
    records = list(read_records(run_dir))
    assert Counter((r.variant, r.case_id) for r in records).most_common(1)[0][1] == 1
    assert Counter(r.variant for r in records) == {"F16": 3, "Q4_K_M": 3}
    summary = load_run(run_dir).summary
    assert summary.status == "complete"
    q4 = summary.entry("Q4_K_M")
    assert q4 is not None
    assert (q4.complete, q4.cases, q4.resumed_cases) == (True, 3, held["Q4_K_M"])
    assert q4.token_fidelity is not None  # measured at the end of the resumed run
    assert json.loads(resumed.stdout)["status"] == "complete"

    # the same cases at concurrency 1 without an interruption give the same outputs (the first 3
    # of the uninterrupted run's 4: a limit takes the first cases of each language in turn)
    uninterrupted = {(r.variant, r.case_id): r.raw for r in read_records(restaurants_at_concurrency_1)}
    outputs = {(r.variant, r.case_id): r.raw for r in records}
    assert set(outputs) < set(uninterrupted)
    assert {key: uninterrupted[key] for key in outputs} == outputs
