"""quantgate's token fidelity beside its anchor, `llama-perplexity --kl-divergence`, on the same tokens.

One text (the restaurants cases' texts, joined by blank lines) goes to llama.cpp's own tool:

1. `llama-perplexity -m F16.gguf -f text --kl-divergence-base base.kld -c 512 --chunks K` tokenizes
   it, cuts the tokens into K chunks of 512 (BOS in place of each chunk's first token) and stores,
   for the second half of each chunk, the reference's log-probabilities (16 bits, the 16 nats below
   the top) in base.kld, with the tokens;
2. `llama-perplexity -m VARIANT.gguf --kl-divergence-base base.kld --kl-divergence` reads the same
   tokens back and reports KLD (mean, median, 99%, 99.9%), Δp and "Same top p".

quantgate's side reads the tokens from base.kld (the same tokenization by construction) and scores
exactly the positions llama-perplexity scores (`scored_positions`): in each chunk of n_ctx tokens,
the logits after tokens n_ctx/2 .. n_ctx-2, predicting tokens n_ctx/2+1 .. n_ctx-1. It computes the
F16 and the variant's full logits there with quantgate's teacher forcing (the prompt is the chunk up
to n_ctx/2, the target its rest) through the bindings, and pools `evaluators.fidelity`'s figures.
A third column applies llama-perplexity's own formula (`llama_formula`) to its stored 16-bit base
and the bindings' variant logits, to tell the base's compression from the rest.

    flock /tmp/quantgate-cpu.lock python benchmarks/kld_crosscheck.py [--chunks 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LADDER = Path.home() / ".cache" / "quantgate" / "ladder"
VARIANTS = ("F16", "Q8_0", "Q4_K_M", "Q2_K")
"""F16 against itself: llama-perplexity's floor (its 16-bit base), and the two runtimes' logits gap."""
LLAMA_LOG_PROB_FLOOR = -16.0
"""llama-perplexity leaves out of the KLD sum every token whose stored base log-probability is at
most this (and stores every logit more than 16 below the top as that floor)."""

_REPORT = {
    "kld_mean": r"Mean\s+KLD:\s+(-?[\d.]+)",
    "kld_max": r"Maximum KLD:\s+(-?[\d.]+)",
    "kld_p999": r"99\.9%\s+KLD:\s+(-?[\d.]+)",
    "kld_p99": r"99\.0%\s+KLD:\s+(-?[\d.]+)",
    "kld_p95": r"95\.0%\s+KLD:\s+(-?[\d.]+)",
    "kld_median": r"Median\s+KLD:\s+(-?[\d.]+)",
    "delta_p_mean": r"Mean\s+Δp:\s+(-?[\d.]+)\s*±",
    "delta_p_p1": r"\s1\.0%\s+Δp:\s+(-?[\d.]+)%",
    "top1_agreement": r"Same top p:\s+(-?[\d.]+)\s*±",
}
_PERCENT = {"delta_p_mean", "delta_p_p1", "top1_agreement"}


def parse_report(text: str) -> dict[str, float]:
    """The figures of llama-perplexity's KL-divergence report (percentages as fractions).

    Raises:
        ValueError: A figure is missing (the run failed or scored under 100 positions), naming it.
    """
    figures = {}
    for name, pattern in _REPORT.items():
        match = re.search(pattern, text)
        if match is None:
            raise ValueError(
                f"llama-perplexity's report has no {name} (pattern {pattern!r}); tail: {text[-500:]}"
            )
        value = float(match.group(1))
        figures[name] = value / 100 if name in _PERCENT else value
    return figures


@dataclass(frozen=True)
class ChunkSplit:
    """One chunk as quantgate's teacher forcing reads it: the prompt, then the scored target."""

    prompt: list[int]
    target: list[int]


def scored_positions(tokens: list[int], *, n_ctx: int, bos: int | None) -> list[ChunkSplit]:
    """llama-perplexity's chunks and scored positions (its `kl_divergence` and `perplexity`).

    Chunk i is tokens[i*n_ctx:(i+1)*n_ctx] with its first token replaced by BOS (when the model adds
    one); the logits after positions n_ctx/2 .. n_ctx-2 are scored, each predicting the next token.
    So the prompt is the chunk's first n_ctx/2 + 1 tokens and the target its last n_ctx - 1 - n_ctx/2.
    """
    if len(tokens) % n_ctx:
        raise ValueError(f"{len(tokens)} tokens are not whole chunks of {n_ctx}")
    first = n_ctx // 2
    splits = []
    for start in range(0, len(tokens), n_ctx):
        chunk = list(tokens[start : start + n_ctx])
        if bos is not None:
            chunk[0] = bos
        splits.append(ChunkSplit(prompt=chunk[: first + 1], target=chunk[first + 1 :]))
    return splits


@dataclass(frozen=True)
class KldBase:
    """A `--kl-divergence-base` file: the tokens and the reference's stored log-probabilities."""

    n_ctx: int
    n_vocab: int
    tokens: list[int]
    rows: np.ndarray[Any, Any]
    """uint16, (chunks * (n_ctx - 1 - n_ctx/2), n_vocab + pad + 4): per row scale, floor, values."""

    @classmethod
    def read(cls, path: Path) -> KldBase:
        data = path.read_bytes()
        if data[:8] != b"_logits_":
            raise ValueError(f"{path} is not a llama-perplexity --kl-divergence-base file")
        n_ctx, n_vocab, n_chunk = np.frombuffer(data, dtype=np.int32, count=3, offset=8).tolist()
        tokens = np.frombuffer(data, dtype=np.int32, count=n_ctx * n_chunk, offset=20).tolist()
        nv = 2 * ((n_vocab + 1) // 2) + 4
        rows = np.frombuffer(data, dtype=np.uint16, offset=20 + 4 * len(tokens)).reshape(-1, nv)
        return cls(n_ctx=n_ctx, n_vocab=n_vocab, tokens=tokens, rows=rows)

    def log_probs(self, row_slice: slice) -> np.ndarray[Any, Any]:
        """The stored base log-probabilities of these rows, float32 (n, n_vocab)."""
        rows = self.rows[row_slice]
        header = rows[:, :4].copy().view(np.float32)  # scale, floor log-prob
        values = rows[:, 4 : 4 + self.n_vocab].astype(np.float32)
        return values * header[:, :1] + header[:, 1:2]


def llama_formula(
    base_log_probs: np.ndarray[Any, Any], logits: np.ndarray[Any, Any]
) -> dict[str, np.ndarray[Any, Any]]:
    """llama-perplexity's per-position KLD and top-1 from its stored base and a variant's logits."""
    logits = logits.astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_q = logits - (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))
    kept = base_log_probs > LLAMA_LOG_PROB_FLOOR
    terms = np.where(kept, np.exp(base_log_probs) * (base_log_probs - log_q), 0.0)
    same_top = np.argmax(base_log_probs, axis=-1) == np.argmax(logits, axis=-1)
    return {"kld": terms.sum(axis=-1), "top1": same_top}


def run_tool(args: list[str]) -> str:
    """Run a llama.cpp tool; its stdout and stderr (the report is logged to stderr)."""
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout + done.stderr


def restaurants_text() -> str:
    from quantgate.inputs._dataset import load_dataset

    return "\n\n".join(case.text for case in load_dataset("restaurants").cases)


def _open(path: Path, n_ctx: int, flash_attn: bool) -> Any:
    import llama_cpp

    threads = os.cpu_count() or 1
    return llama_cpp.Llama(
        model_path=str(path),
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        flash_attn=flash_attn,
        verbose=False,
    )


def _text_delta_p(
    reference: np.ndarray[Any, Any], variant: np.ndarray[Any, Any], tokens: list[int]
) -> list[float]:
    """llama-perplexity's Δp: p_variant - p_reference of the text's next token (not the top token)."""

    def p(logits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        rows = logits.astype(np.float64)
        top = rows.max(axis=-1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(rows - top).sum(axis=-1))
        return np.asarray(np.exp(rows[np.arange(len(tokens)), tokens] - log_z))

    return [float(d) for d in p(variant) - p(reference)]


def _bindings_side(
    reference: list[np.ndarray[Any, Any]], variant: Any, splits: list[ChunkSplit], base: KldBase, rows: int
) -> dict[str, float | None]:
    """quantgate's figures and llama's formula on the bindings' logits, pooled over the chunks."""
    from evaluators.fidelity import summarize_token_fidelity, token_fidelity
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    cases, formula_kld, formula_top1, text_delta_p, offset = [], [], [], [], 0
    for split, ref in zip(splits, reference, strict=True):
        var = forced_logits(variant, split.prompt, split.target, rows_per_batch=rows)
        cases.append(token_fidelity(reference_logits=ref, variant_logits=var))
        text_delta_p += _text_delta_p(ref, var, split.target)
        for block in range(0, len(split.target), 16):
            rows_here = slice(offset + block, offset + min(block + 16, len(split.target)))
            figures = llama_formula(base.log_probs(rows_here), var[block : block + 16])
            formula_kld += figures["kld"].tolist()
            formula_top1 += figures["top1"].tolist()
        offset += len(split.target)
    summary = summarize_token_fidelity(cases=cases)
    pooled = np.asarray([k for case in cases for k in case.kld])
    return {
        "positions": summary.positions,
        "kld_mean": summary.kld_mean,
        "kld_median": float(np.median(pooled)),
        "kld_p99": summary.kld_p99,
        "kld_p999": summary.kld_p999,
        "kld_max": summary.kld_max,
        "top1_agreement": summary.top1_agreement,
        "delta_p_mean": summary.delta_p_mean,
        "text_delta_p_mean": float(np.mean(text_delta_p)),
        "formula_kld_mean": float(np.mean(formula_kld)),
        "formula_kld_p99": float(np.percentile(formula_kld, 99)),
        "formula_top1_agreement": float(np.mean(formula_top1)),
    }


def _table(results: dict[str, dict[str, Any]]) -> str:
    rows = [
        ("mean KLD", "kld_mean", "kld_mean", "formula_kld_mean"),
        ("median KLD", "kld_median", "kld_median", None),
        ("99% KLD", "kld_p99", "kld_p99", "formula_kld_p99"),
        ("99.9% KLD", "kld_p999", "kld_p999", None),
        ("max KLD", "kld_max", "kld_max", None),
        ("top-1 (Same top p)", "top1_agreement", "top1_agreement", "formula_top1_agreement"),
        ("mean Δp (text token)", "delta_p_mean", "text_delta_p_mean", None),
        ("mean Δp (top token)", None, "delta_p_mean", None),
    ]
    lines = [
        "| variant | figure | llama-perplexity | quantgate | llama's formula, bindings' logits |",
        "|---|---|---|---|---|",
    ]
    for variant, figures in results.items():
        for label, llama, ours, formula in rows:
            cells = [figures["llama"].get(llama) if llama else None, figures["quantgate"][ours]]
            cells.append(figures["quantgate"][formula] if formula else None)
            text = ["" if c is None else f"{c:.6f}" for c in cells]
            lines.append(f"| {variant} | {label} | " + " | ".join(text) + " |")
    return "\n".join(lines)


def main() -> None:
    from quantgate._hardware import package_version
    from quantgate.backends.llamacpp._teacher_forcing import DEFAULT_ROWS_PER_BATCH, forced_logits
    from quantgate.ladder._llama_tools import llama_tool

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--rows-per-batch", type=int, default=DEFAULT_ROWS_PER_BATCH)
    parser.add_argument(
        "--flash-attn", choices=("on", "off"), default="off", help="both runtimes (default: off)"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tool = str(llama_tool("llama-perplexity"))
    size = [
        "-c",
        str(args.ctx),
        "-b",
        str(args.ctx),
        "--chunks",
        str(args.chunks),
        "-t",
        str(os.cpu_count() or 1),
        "-fa",
        args.flash_attn,
    ]
    flash_attn = args.flash_attn == "on"
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as work:
        text, base_path = Path(work) / "text.txt", Path(work) / "base.kld"
        text.write_text(restaurants_text())
        run_tool(
            [
                tool,
                "-m",
                str(LADDER / "gemma-3-270m-F16.gguf"),
                "-f",
                str(text),
                "--kl-divergence-base",
                str(base_path),
                *size,
            ]
        )
        base = KldBase.read(base_path)
        reference_llama = _open(LADDER / "gemma-3-270m-F16.gguf", args.ctx, flash_attn)
        bos = reference_llama.token_bos() if reference_llama._model.add_bos_token() else None
        splits = scored_positions(base.tokens, n_ctx=base.n_ctx, bos=bos)
        reference = [
            forced_logits(reference_llama, s.prompt, s.target, rows_per_batch=args.rows_per_batch)
            for s in splits
        ]
        for name in args.variants.split(","):
            model = LADDER / f"gemma-3-270m-{name}.gguf"
            report = run_tool(
                [tool, "-m", str(model), "--kl-divergence-base", str(base_path), "--kl-divergence", *size]
            )
            ours = _bindings_side(
                reference, _open(model, args.ctx, flash_attn), splits, base, args.rows_per_batch
            )
            results[name] = {"llama": parse_report(report), "quantgate": ours}
    meta = {
        "llama_cpp_python": package_version("llama_cpp_python"),
        "tool": tool,
        "tokens": len(base.tokens),
        "chunks": args.chunks,
        "n_ctx": args.ctx,
        "rows_per_batch": args.rows_per_batch,
        "flash_attn": args.flash_attn,
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip(),
    }
    print(json.dumps(meta, indent=1))
    print(_table(results))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
