"""End to end on the real embedded ladder: on 4 cases Q2_K fails the gates, Q8_0 cannot be shown
safe yet (no valid interval can pass a 5-point gate from 4 cases), and every number in the
decision traces back to the run's records."""

import json
from pathlib import Path

import numpy as np
import pytest

from quantgate.cli._main import main
from quantgate.inputs._variants import VariantSet, write_variants_file
from quantgate.rundir._store import latest_records, read_records

pytestmark = [pytest.mark.model, pytest.mark.slow]

CASES = 4  # Q2_K's drop on them is three times the 5-point gate (-16 points; -24 on 10 cases)


@pytest.fixture(scope="module")
def q2k_variants(default_ladder: tuple[VariantSet, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """F16, Q8_0 and Q2_K (the session's default ladder), capped at 320 tokens.

    The cap keeps Q2_K's repetition loops short; the F16 reference's longest answer on these
    cases is about 250 tokens.
    """
    chosen = [v for v in default_ladder[0].variants if v.name in ("F16", "Q8_0", "Q2_K")]
    capped = VariantSet(
        reference="F16",
        variants=[v.model_copy(update={"options": {**v.options, "max_tokens": 320}}) for v in chosen],
    )
    path = tmp_path_factory.mktemp("q2k") / "variants.toml"
    write_variants_file(path, capped)
    return path


def _case_mean(fields: dict[str, float]) -> float:
    return sum(fields.values()) / len(fields)


def test_q2k_fails_the_gates_while_q8_0_is_not_passed_on_four_cases(
    q2k_variants: Path, tmp_path: Path, capsys
) -> None:
    # one case at a time: batching changes some of a quantized variant's greedy choices
    # (docs/performance.md); run to run, the same outputs
    args = ["run", "--variants", str(q2k_variants), "--dataset", "tech-config", "--limit", str(CASES),
            "--concurrency", "1", "--token-fidelity-cases", "3"]  # fmt: skip
    gates = ["--min-cases", str(CASES), "--min-slice-cases", str(CASES)]  # the defaults ask for 30 and 20
    # One error in 4 allowed (the default is 5%): greedy answers depend on the CPU's kernels, and on
    # an AMD EPYC with AVX-512 Q8_0 repeats one flag of tc-en-001 up to the 320-token cap (the code
    # before issue 20 does the same there). Q2_K fails on 2 of 4 (5 of 10).
    # The same answer is the one format-invalid output in 4, so format validity allows it too (0.75;
    # the default 0.90 failed Q8_0 on that CPU, at this commit and the one before it).
    gates += ["--max-error-rate", "0.25", "--min-format-validity", "0.75"]
    code = main([*args, "--out", str(tmp_path / "runs"), "--max-repairs", "0", *gates])
    out = capsys.readouterr().out
    assert code == 4, out  # keep the reference: 4 cases cannot show Q8_0 safe
    assert "decision: keep the reference F16" in out
    (run_dir,) = (tmp_path / "runs").iterdir()
    decision = json.loads((run_dir / "decision.json").read_text())
    assert decision["recommended"] == "F16"
    q8, q2 = decision["variants"]["Q8_0"], decision["variants"]["Q2_K"]
    assert (q8["passes"], q8["verdict"]) == (False, "inconclusive")
    (accuracy,) = [g for g in q8["gates"] if g["gate"] == "max_accuracy_drop"]
    assert accuracy["status"] == "inconclusive"
    assert accuracy["interval"]["low"] < -0.05 <= accuracy["interval"]["high"]
    assert "fixed sample" in accuracy["interval"]["method"]
    assert q2["passes"] is False
    failed = {g["gate"] for g in q2["gates"] if g["status"] == "fail"}
    assert "max_accuracy_drop" in failed

    # every figure traces to the records
    records = latest_records(read_records(run_dir))
    for name, section in (("Q8_0", q8), ("Q2_K", q2)):
        deltas = [
            _case_mean(records[name][case].fields) - _case_mean(ref.fields)
            for case, ref in records["F16"].items()
        ]
        overall = section["comparison"]["overall"]
        assert overall["cases"] == CASES
        assert overall["delta"] == pytest.approx(np.mean(deltas))
        valid = [bool(r.format_valid) for r in records[name].values()]
        assert section["measured"]["format_validity"] == pytest.approx(np.mean(valid))
    fidelity = [json.loads(line) for line in (run_dir / "fidelity.jsonl").read_text().splitlines()]
    for name, section in (("Q8_0", q8), ("Q2_K", q2)):
        pooled = [k for r in fidelity if r["variant"] == name for k in r["kld"]]
        assert section["token_fidelity"]["kld_mean"] == pytest.approx(np.mean(pooled))
    assert q2["token_fidelity"]["kld_mean"] > 10 * q8["token_fidelity"]["kld_mean"]
    assert q8["token_fidelity"]["top1_agreement"] > q2["token_fidelity"]["top1_agreement"]

    # the regression set is a valid dataset, and the exit status gates
    assert decision["regression_sets"]["Q2_K"]["cases"] > 0
    assert main(["datasets", "check", str(run_dir / decision["regression_sets"]["Q2_K"]["path"])]) == 0
    assert main(["decide", str(run_dir), *gates, "--max-memory-mb", "100"]) == 3
    assert "No variant passes" in (run_dir / "decision.md").read_text()
