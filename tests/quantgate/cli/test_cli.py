import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quantgate.cli._main import main


def test_console_script_is_installed():
    script = shutil.which("quantgate", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("quantgate is not installed in this environment (pip install -e .)")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, check=True, timeout=120)
    for command in ("datasets", "score", "ladder", "run"):
        assert command in result.stdout


def test_invalid_variant_spec_is_a_clear_error(capsys):
    assert main(["run", "--dataset", "invoices", "--variants", "llamacpp:/nope/model.gguf"]) == 2
    assert "no GGUF file at /nope/model.gguf" in capsys.readouterr().err
    assert main(["run", "--dataset", "invoices", "--variants", "vllm:x"]) == 2
    assert "unknown backend 'vllm'" in capsys.readouterr().err


def test_datasets_list(capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "invoices" in out
    assert "long-documents" in out


def _synthetic_run(directory, b_scores):
    from tests.quantgate.run_factory import make_run

    right = {"a": 1.0, "b": 1.0}
    return make_run(
        directory,
        {"R": [right] * len(b_scores), "Q": [{"a": 1.0, "b": b} for b in b_scores]},
        footprints={"R": 700.0, "Q": 400.0},
        reference="R",
    )


def test_decide_exit_status_gates_a_pipeline(tmp_path, capsys):
    small = _synthetic_run(tmp_path / "small", [1.0] * 12)
    assert main(["decide", str(small)]) == 4  # default gates: 12 cases are too few to show Q is safe
    out = capsys.readouterr().out
    assert "decision: keep the reference R: no quantized variant is shown safe (exit status 4)" in out
    assert re.search(r"^  Q +inconclusive +max_accuracy_drop inconclusive", out, re.MULTILINE)
    assert json.loads((small / "decision.json").read_text())["outcome"] == "keep_reference"
    # nor with a lower --min-cases: 12 identical cases leave a drop of more than 5 points possible
    assert main(["decide", str(small), "--min-cases", "10"]) == 4
    out = capsys.readouterr().out
    assert re.search(r"^  Q +inconclusive +max_accuracy_drop inconclusive", out, re.MULTILINE)
    run = _synthetic_run(tmp_path / "run", [1.0] * 100)  # enough identical cases to bound the drop
    assert main(["decide", str(run)]) == 0
    out = capsys.readouterr().out
    assert "decision: Q replaces the reference R (exit status 0)" in out
    assert re.search(r"^  Q +pass +every gate passes", out, re.MULTILINE)
    assert (run / "decision.md").is_file()
    assert main(["decide", str(run), "--max-memory-mb", "100"]) == 3
    out = capsys.readouterr().out
    assert "no variant passes every gate, not even the reference (exit status 3)" in out
    assert re.search(r"^  Q +fail +max_memory_mb fail", out, re.MULTILINE)


def test_decide_reads_a_gates_file_and_reports_its_errors(tmp_path, capsys):
    run = _synthetic_run(tmp_path / "run", [1.0] * 100)
    assert main(["decide", str(run)]) == 0  # Q passes the default gates
    capsys.readouterr()
    gates = tmp_path / "gates.toml"
    gates.write_text("min_cases = 101\n")  # 100 paired cases: Q's accuracy gate is inconclusive
    assert main(["decide", str(run), "--gates", str(gates)]) == 4
    assert "decision: keep the reference R" in capsys.readouterr().out
    gates.write_text("min_format_validity = 95\n")
    assert main(["decide", str(run), "--gates", str(gates)]) == 2
    assert f"{gates}: min_format_validity" in capsys.readouterr().err


def test_compare_two_runs(tmp_path, capsys):
    n = 300  # identical cases: the interval of R's delta lies within ±2 points from 240
    before = _synthetic_run(tmp_path / "before", [1.0] * n)
    after = _synthetic_run(tmp_path / "after", [0.0] * n)  # the upgrade broke field b
    assert main(["compare", str(before), str(after), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["same_dataset"] is True
    q = result["variants"]["Q"]
    assert q["paired_cases"] == n
    assert q["comparison"]["fields"]["b"]["delta"] == -1.0
    assert q["comparison"]["fields"]["b"]["verdict"] == "worse"
    assert q["comparison"]["fields"]["b"]["mcnemar_p"] == pytest.approx(2 * 0.5**n)
    assert result["variants"]["R"]["comparison"]["overall"]["verdict"] == "equivalent"
    assert main(["compare", str(before), str(after)]) == 0
    text = capsys.readouterr().out
    assert "field b" in text
    assert "worse" in text
