"""The capacity gates: parallel sequences from the recorded model shape, goodput from the load test.

The small shape's figures are computed by hand below; the real one is checked against
`quantgate capacity`'s own computation on the ladder's GGUF header.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators.memory_model import ModelShape
from quantgate.capacity._capacity_checks import goodput_level, goodput_result, parallel_sequences_result
from quantgate.capacity._shape_record import MemoryModelEntry, capacity_figure
from quantgate.decide._recommendation import decide
from quantgate.inputs._gates import Gates, GatesError, load_gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection, LoadVariantEntry
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import VariantsFile
from tests.quantgate.run_factory import make_run

TINY = ModelShape(
    architecture="tiny",
    n_layer=2,
    n_head=1,
    n_head_kv=(1, 1),
    key_length=4,
    value_length=4,
    n_embd=4,
    n_ff=8,
    n_vocab=10,
    context_length=1024,
)
"""By hand, at context 100 and s sequences, f16 cache, weights 1,000 bytes, no baseline:
KV per token 2 layers x 1 head x (4 x 2 + 4 x 2) = 32 B; KV 32 x 100 s + 32 x 512 (the tokenizer's
context) = 3,200 s + 16,384; vocabulary 160 x 10 = 1,600; outputs 4 x 10 x (s + 2) = 40 s + 80;
compute 4 x (512 x (8 x 4 + 4 x 4 + 3 x 8) + 10 s) = 147,456 + 40 s. Total 166,520 + 3,280 s."""
TINY_TOTAL_5 = 166_520 + 3_280 * 5  # 182,920 bytes
BASELINE = 2**30 - TINY_TOTAL_5 - 100  # 1 GiB holds 5 sequences with 100 bytes to spare, not 6


def test_the_tiny_shape_fits_five_sequences_by_hand() -> None:
    entry = MemoryModelEntry(shape=TINY, weights_bytes=1_000)
    figure = capacity_figure(entry, memory_gib=1.0, context=100, baseline_bytes=BASELINE)
    assert (figure.sequences, figure.kv_bytes_per_token, figure.kv_cache) == (5, 32.0, "f16")
    assert capacity_figure(entry, memory_gib=1.0, context=100, baseline_bytes=BASELINE + 101).sequences == 4


def _gates(**values: object) -> Gates:
    return Gates.model_validate({"capacity_context": 4096, "capacity_memory_gib": 2.0, **values})


def test_the_gate_needs_a_memory_budget() -> None:
    with pytest.raises(GatesError, match="min_parallel_sequences needs capacity_memory_gib"):
        load_gates(overrides={"min_parallel_sequences": 4})
    assert (
        load_gates(overrides={"min_parallel_sequences": 4, "capacity_memory_gib": 2.0}).capacity_context
        == 4096
    )


def test_no_record_is_not_measured() -> None:
    result = parallel_sequences_result(
        "min_parallel_sequences", 4, None, None, _gates(min_parallel_sequences=4)
    )
    assert (result.status, result.value) == ("not_measured", None)


@pytest.mark.slow  # the F16 reference is dequantized once per session (about 15 s)
def test_the_recorded_shape_gives_what_quantgate_capacity_gives_for_the_ladder(
    bundled_gguf: Path, reference_ladder: VariantSet
) -> None:
    from quantgate.capacity._capacity_run import variant_capacity
    from quantgate.capacity._shape_reading import memory_model_entry
    from quantgate.capacity._shape_record import PROCESS_BASELINE_BYTES

    # The bundled Q4_K_M stands for the ladder's: quantizing its F16 back to Q4_K_M gives the same
    # header and the same size (253,113,024 bytes), which is all that capacity reads.
    files = {"Q4_K_M": bundled_gguf, "F16": Path(reference_ladder.variants[0].model)}
    found = {}
    for name, path in files.items():
        variant = Variant(name=name, backend="llamacpp", model=str(path))
        entry = memory_model_entry(variant)
        assert entry is not None
        direct = variant_capacity(
            variant, budget_bytes=2 * 2**30, context=4096, baseline_bytes=PROCESS_BASELINE_BYTES
        )
        recorded = MemoryModelEntry.model_validate_json(entry.model_dump_json())  # through variants.json
        result = parallel_sequences_result("min_parallel_sequences", 18, recorded, None, _gates())
        assert result.value == direct.sequences
        found[name] = (result.value, result.status)
    assert found == {"Q4_K_M": (20.0, "pass"), "F16": (16.0, "fail")}  # as docs/commands.md measured


def _level(name: str, rate: float | None, goodput: tuple[float, float, float] | None) -> LoadLevelEntry:
    point, low, high = goodput if goodput else (None, None, None)
    return LoadLevelEntry(
        name=name, concurrency=4, instances=1, rss_peak_mb=None, arrivals="poisson" if rate else "closed",
        rate_per_s=rate, requests=60, answered=60, errors=0, errors_by_kind={}, wall_s=30.0,
        ttft_s_p50=None, ttft_s_p95=None, ttft_s_p99=None, inter_token_s_mean=None, inter_token_s_p95=None,
        request_tokens_per_s_p50=None, aggregate_tokens_per_s=None, requests_per_s=2.0,
        within_targets=None if goodput is None else 48, goodput_rps=point, goodput_rps_low=low,
        goodput_rps_high=high,
    )  # fmt: skip


def _section(levels: list[LoadLevelEntry], variant: str = "A") -> LoadSection:
    return LoadSection(
        levels=[], requests_per_level=60, duration_s_per_level=None, max_tokens=None, cases=5,
        variants=[LoadVariantEntry(name=variant, backend="test", levels=levels)],
    )  # fmt: skip


def test_the_goodput_level_is_the_highest_rate_poisson_level_whatever_its_result() -> None:
    low_rate = _level("p1", 1.0, (1.0, 0.9, 1.1))
    high_rate = _level("p3", 3.0, (1.6, 1.2, 2.1))  # a lower goodput than p1's: still the one judged
    section = _section([_level("c4", None, None), high_rate, low_rate])
    assert goodput_level(section, "A") is high_rate
    assert goodput_level(section, "B") is None
    assert goodput_level(None, "A") is None
    assert goodput_level(_section([_level("c4", None, None)]), "A") is None


@pytest.mark.parametrize(
    ("goodput", "status"),
    [
        ((1.6, 1.2, 2.1), "pass"),  # low 1.2 >= 1.2
        ((1.0, 0.7, 1.19), "fail"),  # high 1.19 < 1.2
        ((1.3, 1.1, 1.6), "inconclusive"),  # the interval straddles 1.2
        (None, "not_measured"),  # no latency targets
    ],
)
def test_the_goodput_gate_judges_the_interval(
    goodput: tuple[float, float, float] | None, status: str
) -> None:
    result = goodput_result("min_goodput_rps", 1.2, _level("p3", 3.0, goodput))
    assert result.status == status
    assert result.value == (goodput[0] if goodput else None)
    if goodput:
        assert result.interval is not None
        assert (result.interval.low, result.interval.high) == goodput[1:]


def test_decide_judges_both_gates_from_the_run_directory_alone(tmp_path: Path) -> None:
    right = {"a": 1.0, "b": 1.0}
    run = make_run(
        tmp_path / "run", {"R": [right] * 5, "A": [right] * 5}, footprints={"R": 700.0, "A": 450.0}
    )
    variants_file = VariantsFile.model_validate_json((run / VARIANTS_FILE).read_text())
    tiny = MemoryModelEntry(shape=TINY, weights_bytes=1_000)
    lines = [
        v.model_copy(update={"memory_model": tiny}) if v.name == "A" else v for v in variants_file.variants
    ]
    write_model(run / VARIANTS_FILE, VariantsFile(variants=lines))
    summary = read_summary(run)
    summary.load = _section([_level("p3", 3.0, (1.6, 1.2, 2.1))])
    write_model(run / SUMMARY_FILE, summary)
    # 2 GiB at 4,096 tokens: a sequence adds 32 x 4,096 + 40 + 40 = 131,152 B (as TINY's docstring
    # counts), so 255 of them take 33.4 MB above the 215 MiB baseline: llama.cpp's limit, 255, is the figure.
    gates = _gates(min_parallel_sequences=255, min_goodput_rps=1.2, max_accuracy_drop=None)
    decision = decide(run, gates)
    judged = {g.gate: (g.status, g.value) for g in decision.variants["A"].gates}
    assert judged["min_parallel_sequences"] == ("pass", 255.0)
    assert judged["min_goodput_rps"] == ("pass", 1.6)
    reference = {g.gate: g.status for g in decision.variants["R"].gates}
    assert reference["min_parallel_sequences"] == "not_measured"  # R has no record
    assert reference["min_goodput_rps"] == "not_measured"  # R was not load-tested
