"""The fast greedy decoder gives exactly what llama-cpp-python's own grammar sampling gives."""

from typing import Any

import pytest

from graphs.prompting import build_messages
from quantgate.evaluate._options import select_cases
from quantgate.inputs._dataset import load_dataset

pytestmark = pytest.mark.model


def test_same_tokens_as_create_completion(ladder):
    from llama_cpp.llama_grammar import LlamaGrammar

    from quantgate.backends._base_prompt import render_prompt
    from quantgate.backends.llamacpp._engine import EmbeddedEngine
    from quantgate.backends.llamacpp._greedy import Generation

    engine = EmbeddedEngine(next(v.model for v in ladder.variants if v.name == "Q4_K_M"), n_ctx=4096)
    dataset = load_dataset("invoices")
    examples = [(e.text, e.expected) for e in dataset.examples[:2] if e.expected is not None]
    gbnf = engine.grammar(dataset.schema)
    reference_grammar = LlamaGrammar.from_string(gbnf, verbose=False)
    try:
        for case in select_cases(dataset.cases, 2):
            prompt = render_prompt(build_messages(schema=dataset.schema, examples=examples, text=case.text))
            stats = Generation()
            fast = "".join(engine.decoder.generate(prompt, gbnf, 200, stats))
            stream: Any = engine.llama.create_completion(
                prompt, max_tokens=200, temperature=0.0, grammar=reference_grammar, stream=True
            )
            slow = "".join(chunk["choices"][0]["text"] for chunk in stream)
            assert fast == slow
            assert stats.output_tokens > 10
            assert stats.prompt_tokens > 500
    finally:
        engine.close()
