"""A quantized KV cache on the real embedded model (Gemma 3 270M Q4_K_M): it loads and answers."""

from __future__ import annotations

import json

import jsonschema
import pytest

from graphs.prompting import build_messages
from quantgate.backends.llamacpp._llamacpp import open_llamacpp
from quantgate.evaluate._options import select_cases
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import KVCache, Variant

pytestmark = pytest.mark.model


def test_a_q8_0_cache_variant_answers_two_cases_within_the_schema(ladder):
    import llama_cpp

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    variant = Variant(
        name="Q4_K_M-kv-q8_0",
        backend="llamacpp",
        model=q4.model,
        kv_cache=KVCache(k="q8_0", v="q8_0"),
        options={"n_ctx": 2048},
    )
    dataset = load_dataset("restaurants")
    examples = [(e.text, e.expected) for e in dataset.examples[:1] if e.expected is not None]
    with open_llamacpp(variant, dataset.schema, slots=2) as opened:
        assert opened.runtime["kv_cache"] == {"k": "q8_0", "v": "q8_0"}
        assert opened.runtime["flash_attn"] is True  # a quantized V cache needs it
        engine = opened.chat_model.engine  # type: ignore[attr-defined]
        params = engine._batch_context._context.params  # the slots' context, which holds the KV cells
        assert (params.type_k, params.type_v) == (llama_cpp.GGML_TYPE_Q8_0, llama_cpp.GGML_TYPE_Q8_0)
        for case in select_cases(dataset.cases, 2):
            messages = build_messages(schema=dataset.schema, examples=examples, text=case.text)
            answer = opened.chat_model.invoke(messages)
            jsonschema.validate(json.loads(str(answer.content)), dataset.schema)
            assert answer.usage_metadata is not None
            assert answer.usage_metadata["output_tokens"] > 0
