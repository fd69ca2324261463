"""Teacher forcing with llama.cpp: a model's logits at every position of a given continuation.

To compare a variant with the reference token by token, both read the same tokens (a
case's prompt, then the reference's output) and we keep, for each output position, the
logits that predict it. That is one forward pass over the sequence with the output flag
set on the positions we need, not a generation: no sampling, no grammar.

`forced_logits` works on the `llama_cpp.Llama` an `EmbeddedEngine` loads (logits for the
last token only). It evaluates the prompt exactly as `GreedyDecoder` does (keeping the
longest common prefix with the previous sequence in the KV cache; the logits after the
last prompt token predict the first target token), then decodes the target but its last
token in batches with the logits flag set on every token. `Llama.n_tokens` and
`Llama.input_ids` are kept in step with the KV cache, so the same `Llama` can generate
afterwards. (Gemma 3's sliding-window layers allow rolling the cache back because
llama.cpp's context default `swa_full` keeps a full-size SWA cache.)

llama.cpp's CPU kernels for quantized weights take different paths for one token and for a
batch, so batched logits of a quantized model differ slightly from those seen one token at
a time during generation (Gemma 3 270M Q4_K_M: up to ~0.006 nats per position between the
two; F16: ~1e-6), though pooled means barely move. `rows_per_batch=1` reproduces
generation's logits bit for bit, about 3-4 times slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from quantgate.backends.llamacpp._greedy import common_prefix

DEFAULT_ROWS_PER_BATCH = 64
"""Positions with logits per llama.cpp decode call. llama.cpp keeps an output buffer of one
vocabulary row per output position (1 MB for Gemma 3's 262,144 tokens), grown to the largest
batch seen and never shrunk: 64 rows keep ~130 MB per loaded model, a full `n_batch` of 512
~600 MB, for no measured speed gain (within 10% either way on 2 CPU cores)."""


def _eval_prompt(llama: Any, tokens: Sequence[int]) -> None:
    """Evaluate the prompt after its cached prefix, as `GreedyDecoder` does (logits of the last token)."""
    llama.n_tokens = min(common_prefix(llama.input_ids[: llama.n_tokens], tokens), len(tokens) - 1)
    llama.eval(tokens[llama.n_tokens :])  # drops the cache after the prefix first


def _last_logits(llama: Any, n_vocab: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    import llama_cpp

    pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,))


def _decode_with_logits(llama: Any, tokens: Sequence[int], out: np.ndarray[Any, Any]) -> None:
    """Decode `tokens` after the cached ones; row i of `out` gets the logits after tokens[i]."""
    import llama_cpp

    n_vocab = out.shape[1]
    n_past = llama.n_tokens
    llama._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    for i in range(len(tokens)):
        pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, i)
        out[i] = np.ctypeslib.as_array(pointer, shape=(n_vocab,))  # copied: llama.cpp reuses the buffer
    llama.input_ids[n_past : n_past + len(tokens)] = tokens
    llama.n_tokens = n_past + len(tokens)


def forced_logits(
    llama: Any,
    prompt_tokens: Sequence[int],
    target_tokens: Sequence[int],
    *,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The logits a model gives to each token of `target_tokens` after `prompt_tokens`.

    Args:
        llama: A loaded `llama_cpp.Llama` (as `EmbeddedEngine.llama`).
        prompt_tokens: The prompt, BOS included (as `Llama.tokenize` gives it).
        target_tokens: The continuation, without BOS.
        rows_per_batch: Target tokens decoded with logits per llama.cpp call (capped at
            `n_batch`); 1 decodes them one at a time, as generation does.

    Returns:
        Array of shape (len(target_tokens), n_vocab), float32: row i holds the raw logits
        predicting target_tokens[i] given the prompt and target_tokens[:i].

    Raises:
        ValueError: The prompt is empty, the prompt and target do not fit in the context,
            or `rows_per_batch` is below 1.
    """
    n_vocab = llama.n_vocab()
    if rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be at least 1, got {rows_per_batch}")
    if not prompt_tokens:
        raise ValueError("the prompt has no tokens: at least BOS is needed to predict the first target token")
    needed = len(prompt_tokens) + max(len(target_tokens) - 1, 0)
    if needed > llama.n_ctx():
        raise ValueError(
            f"prompt ({len(prompt_tokens)} tokens) and target ({len(target_tokens)} tokens) need "
            f"{needed} positions, more than the context of {llama.n_ctx()}"
        )
    out = np.empty((len(target_tokens), n_vocab), dtype=np.float32)
    if not target_tokens:
        return out
    _eval_prompt(llama, prompt_tokens)
    out[0] = _last_logits(llama, n_vocab)
    forced = target_tokens[:-1]
    step = min(rows_per_batch, llama.n_batch)
    for start in range(0, len(forced), step):
        chunk = forced[start : start + step]
        _decode_with_logits(llama, chunk, out[start + 1 : start + 1 + len(chunk)])
    return out
