"""What a decision costs decoded and verified: a first-order cost model fed by `benchmarks/verify.py`.

From one `benchmarks/verify.py --json FILE` sitting it takes, per candidate, the seconds per case of
decoding and of verifying at 4 slots, the tokens each case reads (its prompt after the shared prefix) and
writes (its answer), and how many cases left the reference's answer; it solves for the seconds per token
of reading (`t_read`) and of decoding (`t_decode`) of the 270M model on this machine (two equations: a
decoded case reads its prompt and decodes its answer; a verified case reads both, and decodes the tail
of the cases that leave the reference's answer, half an answer each on average). It then predicts one
decision, the README's default (F16 reference and three candidates, `--cases` paired cases, the first
`--latency-cases` decoded in full by every variant), for Gemma 3 12B:

- on this machine: both per-token costs scaled by the compute per token (2 x 11.8 G against
  2 x 0.27 G multiply-adds: the transformer and the 262,144-token output layer), since the 270M model
  is compute-bound here at 4 slots in both ways (it reads about 4 GB/s of weights while decoding, far
  below the memory's bandwidth); the bigger model's decoding is also held to its weights' bytes over
  `--bandwidth-gbs` per step of 4 tokens;
- on a CPU server and a GPU: a roofline (reading bound by compute, decoding by the larger of compute and
  weights over bandwidth), with the peak figures given and an efficiency of 30%: assumed, not measured.

Every input is printed with where it comes from (measured here, or assumed).

    python benchmarks/verify_cost.py FILE [--candidate Q4_K_M] [--cases 96] [--bandwidth-gbs 10]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

SMALL_MACS = 0.27e9
"""Gemma 3 270M's multiply-adds per token: ~100 M in its layers, 168 M in its 262,144 x 640 output layer."""
LARGE_MACS = 11.8e9
"""Gemma 3 12B's: ~10.8 G in its 48 layers, 1.0 G in its 262,144 x 3,840 output layer (public config)."""
WEIGHTS_GB = {"F16": 24.4, "BF16": 23.54, "Q8_0": 12.51, "Q5_K_M": 8.45, "Q4_K_M": 7.30, "Q2_K": 4.8}
"""Gemma 3 12B's GGUF sizes per type in GB (assumed): BF16, Q8_0, Q5_K_M and Q4_K_M as the
bartowski/google_gemma-3-12b-it-GGUF listing gives them, not checked against the files here; F16 and
Q2_K about 12.2 G parameters at the type's bits per weight."""
EFFICIENCY = 0.3
"""Share of peak compute and bandwidth a serving stack reaches (assumed)."""
CPU_SERVER = (2.0e12, 150e9)
"""Peak FLOP/s and memory bytes/s of a 32-core CPU server (assumed)."""
MACHINES = {
    "CPU server (32 cores, assumed 2 TFLOPS, 150 GB/s)": CPU_SERVER,
    "GPU (48 GB, assumed 180 TFLOPS fp16, 860 GB/s)": (180e12, 860e9),
}
SLOTS = 4


def per_token_costs(result: dict[str, Any], prefix: int) -> dict[str, float]:
    """`t_read` and `t_decode` (s/token at 4 slots) and tokens per case, from one candidate's figures."""
    cases = result["cases"]
    read = result["prompt_tokens"] / cases - prefix
    written = result["output_tokens"] / cases
    tail = written / 2 * result["obtained"]["verified_then_decoded"] / cases
    decoded, verified = result["decoded"]["wall_s"] / cases, result["verified"]["wall_s"] / cases
    t_read, t_decode = np.linalg.solve([[read, written], [read + written, tail]], [decoded, verified])
    return {
        "t_read": float(t_read),
        "t_decode": float(t_decode),
        "read": read,
        "written": written,
        "tail": tail,
    }


def case_s(costs: dict[str, float], *, verify: bool) -> float:
    """Seconds of one case: decoded (read the prompt, decode the answer) or verified (read the prompt
    and the reference's answer, decode the tail where the candidate leaves it)."""
    if verify:
        return (costs["read"] + costs["written"]) * costs["t_read"] + costs["tail"] * costs["t_decode"]
    return costs["read"] * costs["t_read"] + costs["written"] * costs["t_decode"]


def decision_s(costs: dict[str, float], *, cases: int, latency_cases: int, verify: bool) -> float:
    """Seconds of one decision: the reference decodes every case, three candidates decode the latency
    sample and verify (or decode) the rest."""
    decode, check = case_s(costs, verify=False), case_s(costs, verify=True)
    candidate = latency_cases * decode + (cases - latency_cases) * (check if verify else decode)
    return cases * decode + 3 * candidate


def scaled(costs: dict[str, float], *, flops: float, bandwidth: float, weights_gb: float) -> dict[str, float]:
    """The costs of Gemma 3 12B on a machine of these peak figures (a roofline at `EFFICIENCY`)."""
    compute = 2 * LARGE_MACS / (flops * EFFICIENCY)
    step = max(SLOTS * compute, weights_gb * 1e9 / (bandwidth * EFFICIENCY))
    return costs | {"t_read": compute, "t_decode": step / SLOTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--candidate", default="Q4_K_M")
    parser.add_argument("--cases", type=int, default=96)
    parser.add_argument("--latency-cases", type=int, default=12)
    parser.add_argument(
        "--bandwidth-gbs", type=float, default=10.0, help="this machine's memory bandwidth (measured)"
    )
    args = parser.parse_args()
    figures = json.loads(args.file.read_text())
    result = next(r for r in figures["candidates"] if r["variant"] == args.candidate)
    here = per_token_costs(result, figures["reference"]["shared_prefix_tokens"])
    measured = json.dumps({k: round(v, 5) for k, v in here.items()})
    print(f"measured here (270M, {args.candidate}, 4 slots): {measured}")
    ratio = LARGE_MACS / SMALL_MACS
    weights = WEIGHTS_GB[args.candidate]
    large_here = here | {
        "t_read": here["t_read"] * ratio,
        "t_decode": max(here["t_decode"] * ratio, weights * 1e9 / (args.bandwidth_gbs * 1e9) / SLOTS),
    }
    rows = [("270M on this machine (measured)", here), ("12B on this machine (scaled)", large_here)]
    for name, (flops, bandwidth) in MACHINES.items():
        rows.append((f"12B on a {name}", scaled(here, flops=flops, bandwidth=bandwidth, weights_gb=weights)))
    print(
        f"one decision: {args.cases} paired cases, {args.latency_cases} decoded in full, F16 + 3 candidates"
    )
    print(f"{'where':62} {'decoded h':>9} {'verified h':>10} {'speed-up':>8}")
    for name, costs in rows:
        plain = decision_s(costs, cases=args.cases, latency_cases=args.latency_cases, verify=False)
        fast = decision_s(costs, cases=args.cases, latency_cases=args.latency_cases, verify=True)
        print(f"{name:62} {plain / 3600:9.2f} {fast / 3600:10.2f} {plain / fast:8.2f}")


if __name__ == "__main__":
    main()
