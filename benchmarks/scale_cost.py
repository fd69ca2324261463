"""What a decision costs for Gemma 3 12B on 1, 4 and 8 CPU machines and one GPU: docs/scale.md's tables.

Extends the verification cost model of `benchmarks/verify_cost.py` (issue 45) to the cluster rounds of
issue 50. Measured here (read from `benchmarks/data/verify-restaurants-200.json`, the output of
`benchmarks/verify.py --cases 200 --noise-cases 36` of 2026-12-06, and the README's run): the seconds
per token of reading given tokens and of decoding of the 270M ladder at 4 slots on this 2-core
machine, the tokens a `restaurants` case reads and writes, the share of the answer's tokens each
candidate decodes after leaving the reference's answer, and the paired cases each candidate's
sequence needed. Assumed (`verify_cost.py`'s constants and the ones below): Gemma 3 12B's shape and
file sizes, its per-token costs from a roofline (reading bound by compute, 2 x 11.8 G multiply-adds a
token; decoding by the larger of that and the weights' bytes over the bandwidth per step of 4
slots), the machines' peak figures at 30% efficiency.

The rounds: each round is the next `round_size` cases; the first `latency_cases` are decoded in full
by every variant, later ones verified (or decoded, without verification). A candidate leaves the
rounds once its paired cases are in; the reference runs until the last one leaves. Variants on one
machine take turns; variants on different machines run at the same time, but with verification the
candidates wait for the reference's answers of the round (the reference first). With two actors a
variant, each takes half of each round's cases. Printed: Markdown tables (docs/scale.md holds them).

    python benchmarks/scale_cost.py [FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # verify_cost.py beside this file

from verify_cost import (
    CPU_SERVER,
    EFFICIENCY,
    LARGE_MACS,
    SLOTS,
    SMALL_MACS,
    WEIGHTS_GB,
    case_s,
    per_token_costs,
    scaled,
)

from evaluators.memory_model import PROCESS_BASELINE_MIB, model_shape, predict_memory
from quantgate.evaluate._options import DEFAULT_LATENCY_CASES
from quantgate.evaluate.scheduler._stopping_rule import DEFAULT_ROUND_SIZE

MEASURED = Path(__file__).resolve().parent / "data" / "verify-restaurants-200.json"
TOKENS = Path(__file__).resolve().parent / "data" / "dataset-tokens.json"
"""Tokens a case of each bundled extraction dataset reads and writes (`benchmarks/dataset_tokens.py`)."""
REFERENCE = "BF16"
CANDIDATES = ("Q8_0", "Q5_K_M", "Q4_K_M")
MEASURED_AS = {"BF16": "Q8_0", "Q8_0": "Q8_0", "Q5_K_M": "Q4_K_M", "Q4_K_M": "Q4_K_M"}
"""Whose 270M figures each 12B variant takes: the reference decodes the same prompts to answers of
nearly the same length as Q8_0's (its tail is never used); Q5_K_M, not in the measured ladder, takes
Q4_K_M's (the larger tail: assumed)."""
PAIRED_CASES = {"Q8_0": 96, "Q4_K_M": 108, "Q5_K_M": 108}
"""Paired cases each candidate's sequence needed in the README's run (20261206-210950-3f6fd7,
2026-12-06, measured); Q5_K_M takes the larger (assumed)."""
GEMMA3_12B = {
    "general.architecture": "gemma3", "gemma3.block_count": 48, "gemma3.embedding_length": 3840,
    "gemma3.feed_forward_length": 15360, "gemma3.attention.head_count": 16,
    "gemma3.attention.head_count_kv": 8, "gemma3.attention.key_length": 256,
    "gemma3.attention.value_length": 256, "gemma3.context_length": 131072,
    "gemma3.attention.sliding_window": 1024, "tokenizer.ggml.tokens": 262144,
}  # fmt: skip
"""Gemma 3 12B's GGUF metadata as the memory model reads it (its public config.json: assumed)."""
SLOT_CONTEXT = 2048
"""Context of each of the 4 slots: the embedded backend's 8,192 shared cells."""
GB = 1e9


@dataclass(frozen=True, kw_only=True)
class Machine:
    """One machine kind: its peak compute and memory bandwidth, and its memory (assumed)."""

    name: str
    flops: float
    bandwidth: float
    memory_gb: float


CPU = Machine(name="CPU machine", flops=CPU_SERVER[0], bandwidth=CPU_SERVER[1], memory_gb=128)
"""verify_cost.py's 32-core CPU server (2 TFLOPS, 150 GB/s), with 128 GB of memory: assumed."""
GPU = Machine(name="NVIDIA A100 80GB SXM", flops=312e12, bandwidth=2039e9, memory_gb=80)
"""NVIDIA's datasheet: 312 TFLOPS BF16 dense, 2,039 GB/s HBM2e, 80 GB."""


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Where the four variants run: all on one machine in turn (`shared`), or `actors` per variant,
    each on a machine of its own."""

    name: str
    machine: Machine
    machines: int
    shared: bool = False
    actors: int = 1
    ahead: bool = False
    """With verification: the reference decodes the next round while the candidates verify this one."""


LAYOUTS = (
    Layout(name="1 CPU machine", machine=CPU, machines=1, shared=True),
    Layout(name="4 CPU machines", machine=CPU, machines=4),
    Layout(name="4 CPU machines, the reference a round ahead", machine=CPU, machines=4, ahead=True),
    Layout(name="8 CPU machines, 2 actors a variant", machine=CPU, machines=8, actors=2),
    Layout(name=f"1 GPU ({GPU.name})", machine=GPU, machines=1, shared=True),
)


@dataclass(frozen=True, kw_only=True)
class CaseCosts:
    """Seconds of one case of a variant: decoded in full, and verified."""

    decoded: float
    verified: float


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One decision's cost: its wall time, and the seconds its machines worked."""

    wall_s: float
    busy_s: float
    machines: int

    @property
    def held_s(self) -> float:
        """Machine-seconds held: every machine for the whole decision."""
        return self.machines * self.wall_s


def rounds(
    costs: Mapping[str, CaseCosts],
    paired: Mapping[str, int],
    *,
    verify: bool,
    round_size: int = DEFAULT_ROUND_SIZE,
    latency_cases: int = DEFAULT_LATENCY_CASES,
) -> list[tuple[float, list[float]]]:
    """Each round's work on one machine: the reference's seconds, and each open candidate's.

    `costs` holds the reference (`REFERENCE`) and each candidate of `paired` (its paired cases).
    """
    last = max(paired.values())
    work = []
    for start in range(0, last, round_size):
        cases = min(round_size, last - start)
        timed = max(0, min(latency_cases - start, cases))
        candidates = [
            timed * costs[v].decoded + (cases - timed) * (costs[v].verified if verify else costs[v].decoded)
            for v, needed in paired.items()
            if start < needed
        ]
        work.append((cases * costs[REFERENCE].decoded, candidates))
    return work


def wall_s(work: list[tuple[float, list[float]]], *, layout: Layout, verify: bool) -> float:
    """Wall seconds of the rounds: in turn on one machine; else the variants at the same time, after the
    reference's answers of the round when verifying (or beside its next round, `ahead`)."""
    if layout.shared:
        return sum(reference + sum(candidates) for reference, candidates in work)
    slowest = [max(candidates, default=0.0) for _, candidates in work]
    references = [reference for reference, _ in work]
    if not verify:
        total = sum(map(max, references, slowest))
    elif layout.ahead:
        total = references[0] + sum(map(max, [*references[1:], 0.0], slowest))
    else:
        total = sum(references) + sum(slowest)
    return total / layout.actors


def decision(
    costs: Mapping[str, CaseCosts], paired: Mapping[str, int], *, layout: Layout, verify: bool
) -> Decision:
    """The cost of one decision: rounds until every candidate has its `paired` cases."""
    work = rounds(costs, paired, verify=verify)
    busy = sum(reference + sum(candidates) for reference, candidates in work)
    return Decision(wall_s=wall_s(work, layout=layout, verify=verify), busy_s=busy, machines=layout.machines)


def variant_costs(measured: Mapping[str, dict[str, float]], machine: Machine) -> dict[str, CaseCosts]:
    """Each 12B variant's seconds per case on `machine`, from the 270M figures it takes."""
    costs = {}
    for variant, source in MEASURED_AS.items():
        large = scaled(
            measured[source], flops=machine.flops, bandwidth=machine.bandwidth, weights_gb=WEIGHTS_GB[variant]
        )
        costs[variant] = CaseCosts(decoded=case_s(large, verify=False), verified=case_s(large, verify=True))
    return costs


def with_tokens(
    measured: Mapping[str, dict[str, float]], dataset: Mapping[str, float], restaurants: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """The measured costs with another dataset's tokens a case: its prompt's and gold record's tokens
    over `restaurants`' (where the answers were measured too) times the measured ones; the tail grows
    with the answer."""
    read = dataset["read_tokens"] / restaurants["read_tokens"]
    written = dataset["gold_tokens"] / restaurants["gold_tokens"]
    return {
        variant: here
        | {"read": here["read"] * read, "written": here["written"] * written, "tail": here["tail"] * written}
        for variant, here in measured.items()
    }


def datasets_table(measured: Mapping[str, dict[str, float]], tokens: Mapping[str, object]) -> str:
    """One decision per bundled extraction dataset, on 4 CPU machines and the GPU: its tokens a case,
    and its paired cases (as many as `restaurants` needed, at most the dataset's cases)."""
    datasets: dict[str, dict[str, float]] = tokens["datasets"]  # type: ignore[assignment]
    rows = []
    for name, dataset in datasets.items():
        costs = with_tokens(measured, dataset, datasets["restaurants"])
        paired = {v: min(n, int(dataset["cases"])) for v, n in PAIRED_CASES.items()}
        walls = [
            decision(variant_costs(costs, layout.machine), paired, layout=layout, verify=verify).wall_s / 60
            for layout in (LAYOUTS[1], LAYOUTS[-1])
            for verify in (False, True)
        ]
        rows.append([
            name, str(dataset["cases"]), f"{dataset['read_tokens']:.0f}", f"{dataset['gold_tokens']:.0f}",
            str(max(paired.values())), *(f"{w:.1f}" for w in walls),
        ])  # fmt: skip
    header = [
        "dataset", "cases", "tokens read a case", "gold tokens", "paired cases",
        "4 CPU machines: min decoded", "verified", "GPU: min decoded", "verified",
    ]  # fmt: skip
    return _table(header, rows)


def measured_costs(figures: Mapping[str, object]) -> dict[str, dict[str, float]]:
    """The 270M per-token costs and tokens per case of each measured candidate (`per_token_costs`)."""
    prefix = figures["reference"]["shared_prefix_tokens"]  # type: ignore[index]
    return {r["variant"]: per_token_costs(r, prefix) for r in figures["candidates"]}  # type: ignore[attr-defined]


def memory_gb(variant: str) -> float:
    """The predicted memory of the variant's process (the memory model), in GB."""
    predicted = predict_memory(
        model_shape(GEMMA3_12B), weights_bytes=round(WEIGHTS_GB[variant] * GB),
        baseline_bytes=round(PROCESS_BASELINE_MIB * 2**20), context=SLOT_CONTEXT, sequences=SLOTS,
    )  # fmt: skip
    return predicted.total_bytes / GB


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


def inputs_table(figures: Mapping[str, object], measured: Mapping[str, dict[str, float]]) -> str:
    """The measured inputs, per candidate of the 270M ladder."""
    rows = []
    for result in figures["candidates"]:  # type: ignore[attr-defined]
        if result["variant"] not in MEASURED_AS.values():
            continue
        here = measured[result["variant"]]
        rows.append([
            result["variant"], f"{1000 * here['t_read']:.2f}", f"{1000 * here['t_decode']:.2f}",
            f"{2 * SMALL_MACS / here['t_read'] / GB:.0f}", f"{here['read']:.1f}", f"{here['written']:.1f}",
            f"{result['obtained']['verified']} of {result['cases']}", f"{here['tail']:.1f}",
            str(PAIRED_CASES[result["variant"]]),
        ])  # fmt: skip
    header = [
        "270M variant", "ms a token read", "ms a token decoded", "GFLOP/s reading", "tokens read a case",
        "tokens written", "verified whole", "tokens decoded verifying", "paired cases needed",
    ]  # fmt: skip
    return _table(header, rows)


def per_case_table(measured: Mapping[str, dict[str, float]]) -> str:
    """Each 12B variant's weights, memory and seconds per case on each machine kind."""
    by_machine = [variant_costs(measured, machine) for machine in (CPU, GPU)]

    def seconds(costs: CaseCosts, variant: str) -> str:  # the reference never verifies
        return f"{costs.decoded:.2f} / " + ("—" if variant == REFERENCE else f"{costs.verified:.2f}")

    rows = [
        [
            variant,
            f"{WEIGHTS_GB[variant]:.2f}",
            f"{memory_gb(variant):.1f}",
            *(seconds(c[variant], variant) for c in by_machine),
        ]
        for variant in (REFERENCE, *CANDIDATES)
    ]
    total = sum(memory_gb(v) for v in (REFERENCE, *CANDIDATES))
    fits = [f"fits in {m.memory_gb:.0f} GB: {'yes' if total <= m.memory_gb else 'no'}" for m in (CPU, GPU)]
    rows.append(["all four", f"{sum(WEIGHTS_GB[v] for v in MEASURED_AS):.2f}", f"{total:.1f}", *fits])
    header = ["12B variant", "file GB", "memory GB", f"{CPU.name}: s a case decoded / verified", "GPU: same"]
    return _table(header, rows)


def decisions_table(measured: Mapping[str, dict[str, float]]) -> str:
    """The predicted wall time and machine-hours of one decision per layout, decoded and verified."""
    rows = []
    for layout in LAYOUTS:
        costs = variant_costs(measured, layout.machine)
        plain, fast = (decision(costs, PAIRED_CASES, layout=layout, verify=v) for v in (False, True))
        rows.append([
            layout.name, f"{plain.wall_s / 60:.1f}", f"{fast.wall_s / 60:.1f}",
            f"{plain.wall_s / fast.wall_s:.2f}x",
            f"{plain.held_s / 3600:.2f} ({plain.busy_s / 3600:.2f})",
            f"{fast.held_s / 3600:.2f} ({fast.busy_s / 3600:.2f})",
        ])  # fmt: skip
    header = [
        "where", "wall min, decoded", "wall min, verified", "speed-up", "machine-h (busy), decoded",
        "machine-h (busy), verified",
    ]  # fmt: skip
    return _table(header, rows)


def report(figures: Mapping[str, object], tokens: Mapping[str, object]) -> str:
    """docs/scale.md's tables, computed from the measured figures and the datasets' tokens."""
    measured = measured_costs(figures)
    notes = (
        f"Roofline: reading {2 * LARGE_MACS / GB:.1f} GFLOP a token, decoding in steps of {SLOTS} slots,"
        f" {EFFICIENCY:.0%} of the peak figures; rounds of {DEFAULT_ROUND_SIZE} cases, the first"
        f" {DEFAULT_LATENCY_CASES} decoded in full by every variant."
    )
    return "\n\n".join(
        [
            inputs_table(figures, measured),
            per_case_table(measured),
            decisions_table(measured),
            notes,
            datasets_table(measured, tokens),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "file", type=Path, nargs="?", default=MEASURED, help="benchmarks/verify.py --json output"
    )
    parser.add_argument("--tokens", type=Path, default=TOKENS, help="benchmarks/dataset_tokens.py output")
    args = parser.parse_args()
    print(report(json.loads(args.file.read_text()), json.loads(args.tokens.read_text())))


if __name__ == "__main__":
    main()
