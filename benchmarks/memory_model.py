"""The memory model (`evaluators/memory_model.py`) against measured RSS.

For each model file and each (context, parallel sequences) point, a fresh Python process loads
the model as the embedded backend does with slots (`Llama(use_mmap=False, flash_attn=True)` with
a 512-cell context for tokenizing, then `LlamaBatchContext` with `n_seq_max` = sequences + 1 and
one unified KV buffer of context x sequences cells, full-size SWA cache), decodes a 700-token
prompt in every sequence (micro-batches of 512) and 16 greedy steps of all sequences together,
and reports its peak RSS (`ru_maxrss`) and its RSS before the model loaded (the baseline the
prediction takes). llama.cpp's own KV-cache sizes (its log) are checked against the model's.

Printed per point: predicted and measured peak RSS (MiB), the error, and the KV cache llama.cpp
reports against the model's. Exit status 1 when a point misses the target (10%).

    python benchmarks/memory_model.py [--models PATH ...] [--points 2048x1,4096x2,8192x4,16384x4]
                                      [--kv-cache f16|q8_0|q4_0]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
from pathlib import Path

LADDER = Path.home() / ".cache" / "quantgate" / "ladder"
DEFAULT_MODELS = [LADDER / "gemma-3-270m-Q4_K_M.gguf", LADDER / "gemma-3-270m-F16.gguf"]
TARGET = 0.10
MIB = 2**20
GGML_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}
"""llama.cpp's ggml type numbers of the KV-cache types benchmarked (K and V alike)."""
_KV_LINE = re.compile(r"llama_kv_cache: size =\s*([\d.]+) MiB \(\s*(\d+) cells")


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _generate(batch: object, tokens: list[int], sequences: int) -> None:
    import numpy as np

    last: dict[int, int] = {}
    for seq in range(sequences):
        for start in range(0, len(tokens), 512):
            chunk = tokens[start : start + 512]
            wants = [False] * (len(chunk) - 1) + [start + len(chunk) == len(tokens)]
            batch.decode(chunk, list(range(start, start + len(chunk))), [seq] * len(chunk), wants)  # type: ignore[attr-defined]
        last[seq] = int(np.argmax(batch.logits(len(chunk) - 1)))  # type: ignore[attr-defined]
    position = len(tokens)
    for _ in range(16):
        seqs = list(range(sequences))
        batch.decode([last[s] for s in seqs], [position] * sequences, seqs, [True] * sequences)  # type: ignore[attr-defined]
        last = {s: int(np.argmax(batch.logits(i))) for i, s in enumerate(seqs)}  # type: ignore[attr-defined]
        position += 1


def child(model: str, context: int, sequences: int, kv_cache: str) -> None:
    """Load, decode, print {"baseline": bytes, "peak": bytes} (llama.cpp logs to stderr)."""
    from llama_cpp import Llama

    from quantgate.backends.llamacpp._batch import LlamaBatchContext

    baseline = _peak_rss()
    llama = Llama(
        model_path=model, n_ctx=512, n_threads=2, n_threads_batch=2, flash_attn=True,
        use_mmap=False, verbose=True, type_k=GGML_TYPES[kv_cache], type_v=GGML_TYPES[kv_cache],
    )  # fmt: skip
    batch = LlamaBatchContext(llama, sequences=sequences + 1, n_ctx=context * sequences, n_threads=2)
    text = "Invoice from ACME Corp, dated 3 March 2024, total 1,234.56 EUR, due in 30 days. " * 40
    _generate(batch, llama.tokenize(text.encode())[:700], sequences)
    print(json.dumps({"baseline": baseline, "peak": _peak_rss()}))


def _measure(model: Path, context: int, sequences: int, kv_cache: str) -> tuple[dict[str, int], int]:
    """The child's figures, and the KV bytes llama.cpp reports for the decoding context."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(model), str(context), str(sequences), kv_cache],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    cells = context * sequences
    reported = sum(
        float(size) * MIB for size, n in _KV_LINE.findall(done.stderr) if int(n) == cells and cells != 512
    )
    return figures, round(reported)


def _point(model: Path, context: int, sequences: int, kv_cache: str) -> bool:
    from evaluators.memory_model import kv_cache_bytes, model_shape, predict_memory
    from quantgate.capacity._gguf_metadata import read_gguf_metadata

    shape = model_shape(read_gguf_metadata(model))
    figures, reported_kv = _measure(model, context, sequences, kv_cache)
    predicted = predict_memory(
        shape, weights_bytes=model.stat().st_size, baseline_bytes=figures["baseline"],
        context=context, sequences=sequences, type_k=kv_cache, type_v=kv_cache,
    )  # fmt: skip
    cells = context * sequences
    model_kv = kv_cache_bytes(shape, n_ctx=cells, n_seq_max=sequences + 1, type_k=kv_cache, type_v=kv_cache)
    error = (predicted.total_bytes - figures["peak"]) / figures["peak"]
    print(
        f"{model.name:<26} {kv_cache:<5} {context:>6} x {sequences:<2}"
        f" predicted {predicted.total_bytes / MIB:8.1f} MiB"
        f"  measured {figures['peak'] / MIB:8.1f} MiB  error {error:+6.1%}"
        f"  (baseline {figures['baseline'] / MIB:.1f} MiB; KV {model_kv / MIB:.2f} MiB,"
        f" llama.cpp {reported_kv / MIB:.2f} MiB; {predicted.kv_bytes_per_token:,.0f} B/token)"
    )
    return abs(error) <= TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--points", default="2048x1,4096x2,8192x4,16384x4")
    parser.add_argument("--kv-cache", choices=sorted(GGML_TYPES), default="f16")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]), args.child[3])
        return 0
    from quantgate._hardware import hardware

    print(json.dumps(hardware(), default=str))
    points = [(int(p.split("x")[0]), int(p.split("x")[1])) for p in args.points.split(",")]
    passed = [_point(model, *point, args.kv_cache) for model in args.models for point in points]
    print(f"{sum(passed)}/{len(passed)} points within {TARGET:.0%}")
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
