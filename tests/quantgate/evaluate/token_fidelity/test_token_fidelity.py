"""Teacher forcing with llama.cpp and token-level fidelity of the real ladder to its reference."""

import json
from typing import Any

import numpy as np
import pytest

from evaluators.fidelity import token_fidelity
from graphs.extraction import ExtractionContext, graph
from quantgate.backends._base_prompt import render_prompt
from quantgate.inputs._dataset import load_dataset
from tests.fakes import QueuedChatModel

PROMPT = 'Extract the person as JSON.\n\nText:\nJohn Smith was born in 1970 in Paris.\nJSON: {"name": '
TARGET = '"John Smith", "born": 1970, "city": "Paris"}'


def path_of(ladder, name):
    return next(v.model for v in ladder.variants if v.name == name)


@pytest.fixture(scope="module")
def engines(ladder):
    from quantgate.backends.llamacpp._engine import EmbeddedEngine

    loaded = {name: EmbeddedEngine(path_of(ladder, name), n_ctx=2048) for name in ("F16", "Q4_K_M")}
    yield loaded
    for engine in loaded.values():
        engine.close()


def tokens(engine, prompt=PROMPT, target=TARGET):
    llama = engine.llama
    return llama.tokenize(prompt.encode("utf-8")), llama.tokenize(target.encode("utf-8"), add_bos=False)


def forget_cache(engine):
    engine.llama.n_tokens = 0  # the next evaluation starts from an empty KV cache


def test_case_prompt_is_what_the_extraction_graph_sends():
    from quantgate.evaluate.token_fidelity._measurement import case_prompt

    dataset = load_dataset("contacts-events")
    examples = [(e.text, e.expected) for e in dataset.examples if e.expected is not None]
    model = QueuedChatModel(outputs=[json.dumps(examples[0][1])])
    context = ExtractionContext(model=model, schema=dataset.schema, examples=examples, context_window=8192)
    assert context.input_budget is not None
    assert context.input_budget > 100
    text = dataset.cases[0].text
    long_text = text * (3 * context.input_budget // len(text) + 2)  # cut to the input budget
    for case_text in (text, long_text):
        output = graph.invoke({"text": case_text}, context=context)
        assert len(output["attempts"]) == 1
        assert case_prompt(context, case_text) == render_prompt(model.calls[-1])
    assert output["truncated"]
    cut = case_prompt(context, long_text)
    assert long_text[:500] in cut
    assert long_text.strip() not in cut


@pytest.mark.model
@pytest.mark.parametrize(("name", "max_kld"), [("F16", 1e-4), ("Q4_K_M", 0.05)])
def test_rows_match_llama_cpp_python_logits_all(ladder, engines, name, max_kld):
    from llama_cpp import Llama

    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    prompt, target = tokens(engines[name])
    rows = forced_logits(engines[name].llama, prompt, target)
    assert rows.shape == (len(target), engines[name].llama.n_vocab())
    assert rows.dtype == np.float32
    full = Llama(model_path=str(path_of(ladder, name)), n_ctx=512, logits_all=True, verbose=False)
    try:
        full.eval(prompt + target[:-1])
        expected = np.array(full.scores[len(prompt) - 1 : len(prompt) + len(target) - 1])
    finally:
        full.close()
    if name == "F16":
        assert np.allclose(rows, expected, atol=0.05, rtol=0)
    # quantized kernels differ between batch shapes: compare distributions, not bits
    assert max(token_fidelity(reference_logits=expected, variant_logits=rows).kld) < max_kld
    assert (rows.argmax(axis=1) == expected.argmax(axis=1)).all()


def greedy_with_logits(engine, prompt, max_tokens, monkeypatch):
    """Generate without a grammar, keeping a copy of the logits each step decided on."""
    from quantgate.backends.llamacpp._greedy import Generation

    seen = []
    original = engine.decoder._logits

    def recording():
        seen.append(original().copy())
        return seen[-1]

    monkeypatch.setattr(engine.decoder, "_logits", recording)
    stats = Generation()
    for _ in engine.decoder.generate(prompt, None, max_tokens, stats):
        pass
    monkeypatch.undo()
    kept = seen[: stats.output_tokens]  # without the step that chose end-of-generation, if any
    return [int(np.argmax(row)) for row in kept], np.array(kept)


@pytest.mark.model
@pytest.mark.parametrize("name", ["F16", "Q4_K_M"])
def test_forcing_the_greedy_output_reproduces_generation(engines, name, monkeypatch):
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    engine = engines[name]
    forget_cache(engine)
    generated, seen = greedy_with_logits(engine, PROMPT, 24, monkeypatch)
    assert len(generated) >= 8
    prompt = engine.llama.tokenize(PROMPT.encode("utf-8"))
    forget_cache(engine)
    one_by_one = forced_logits(engine.llama, prompt, generated, rows_per_batch=1)
    assert np.array_equal(one_by_one, seen)  # the same llama.cpp calls as generation: the same bits
    batched = forced_logits(engine.llama, prompt, generated)
    assert (batched.argmax(axis=1) == generated).all()
    if name == "F16":
        assert np.allclose(batched, seen, atol=0.05, rtol=0)


@pytest.mark.model
def test_the_kv_cache_prefix_is_reused_and_gives_the_same_rows(engines, monkeypatch):
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    engine = engines["F16"]
    llama = engine.llama
    prompt, target = tokens(engine)
    other_prompt, _ = tokens(engine, prompt=PROMPT.replace("Paris", "Lyon"))
    forget_cache(engine)
    fresh = forced_logits(llama, prompt, target)
    forced_logits(llama, other_prompt, target)
    shared = next(i for i, (a, b) in enumerate(zip(prompt, other_prompt, strict=False)) if a != b)
    evaluated = []
    original = llama.eval

    def counting(batch):
        evaluated.append(len(batch))
        original(batch)

    monkeypatch.setattr(llama, "eval", counting)
    again = forced_logits(llama, prompt, target)
    assert evaluated == [len(prompt) - shared]  # only the prompt's tail after the shared prefix
    assert llama.n_tokens == len(prompt) + len(target) - 1
    assert list(llama.input_ids[: llama.n_tokens]) == prompt + target[:-1]
    assert np.allclose(again, fresh, atol=0.05, rtol=0)
    assert (again.argmax(axis=1) == fresh.argmax(axis=1)).all()


@pytest.mark.model
def test_generation_after_forcing_is_unchanged(engines):
    from quantgate.backends.llamacpp._greedy import Generation
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    engine = engines["Q4_K_M"]
    forget_cache(engine)
    before = "".join(engine.decoder.generate(PROMPT, None, 16, Generation()))
    prompt, target = tokens(engine, prompt=PROMPT + "x")
    forced_logits(engine.llama, prompt, target)
    after = "".join(engine.decoder.generate(PROMPT, None, 16, Generation()))
    assert after == before


@pytest.mark.model
def test_too_long_for_the_context_is_refused(engines):
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    llama = engines["Q4_K_M"].llama
    prompt, target = tokens(engines["Q4_K_M"])
    with pytest.raises(ValueError, match="more than the context of 2048"):
        forced_logits(llama, prompt * 100, target)
    assert forced_logits(llama, prompt, []).shape == (0, llama.n_vocab())


@pytest.mark.model
def test_reference_against_itself_and_against_q4(ladder):
    from quantgate.backends.llamacpp._engine import EmbeddedEngine
    from quantgate.evaluate.token_fidelity._measurement import measure_token_fidelity

    prompt, target = PROMPT.removesuffix('{"name": '), '{"name": ' + TARGET  # the whole JSON answer
    prompts = {"a": prompt, "b": prompt.replace("John Smith", "Ada Lovelace"), "long": prompt * 60}
    outputs = {"a": target, "b": target.replace("John Smith", "Ada Lovelace"), "long": target}
    records: list[dict[str, Any]] = []
    reference = EmbeddedEngine(path_of(ladder, "F16"), n_ctx=1024)
    summaries = measure_token_fidelity(
        reference=reference,
        variant_paths={"F16": path_of(ladder, "F16"), "Q4_K_M": path_of(ladder, "Q4_K_M")},
        prompts=prompts,
        reference_outputs=outputs,
        engine_options={"n_ctx": 1024},
        on_case=records.append,
        tags={"a": ("lang:en",), "b": ("lang:en", "ada")},
    )
    reference.close()
    assert [(r["variant"], r["case_id"]) for r in records] == [
        (v, c) for c in ("a", "b", "long") for v in ("F16", "Q4_K_M")
    ]
    for record in records[:4]:
        assert record["positions"] == len(record["kld"]) == len(record["top1"]) > 10
        assert "error" not in record
    assert all(r["positions"] is None and "context of 1024" in r["error"] for r in records[4:])
    itself, q4 = summaries["F16"], summaries["Q4_K_M"]
    assert itself.cases == q4.cases == 2
    assert itself.positions == q4.positions == records[0]["positions"] + records[2]["positions"]
    assert itself.kld_max is not None
    assert itself.kld_max < 1e-3
    assert itself.top1_agreement == 1.0
    assert q4.kld_mean is not None
    assert itself.kld_mean is not None
    assert q4.kld_mean > itself.kld_mean
    assert q4.kld_mean > 0
    assert q4.top1_agreement is not None
    assert 0.5 < q4.top1_agreement <= 1.0
    assert_tail(itself, q4, records)


def assert_tail(itself, q4, records):
    """The tail figures of the two measured cases: present, ordered, within their bounds."""
    for record in records[:4]:
        assert len(record["delta_p"]) == len(record["kinds"]) == record["positions"]
    assert itself.delta_p_min is not None
    assert itself.delta_p_min > -1e-3
    assert itself.structural_top1_agreement == itself.value_top1_agreement == 1.0
    assert q4.positions < 1000
    assert q4.kld_p999 is None
    tail = (q4.delta_p_min, q4.delta_p_p1, q4.delta_p_p5, q4.delta_p_p95, q4.delta_p_p99)
    assert None not in tail
    assert tail == tuple(sorted(tail))
    assert -1.0 <= q4.delta_p_min <= 0.0 <= q4.delta_p_p99 <= 1.0
    structural, value = q4.structural_positions, q4.value_positions
    assert structural > 0
    assert value > 0
    assert structural + value == q4.positions  # every token is in the JSON answer
    agreeing = structural * q4.structural_top1_agreement + value * q4.value_top1_agreement
    assert agreeing == pytest.approx(q4.positions * q4.top1_agreement)
    assert sorted(q4.slices) == ["ada", "lang:en"]
    assert q4.slices["lang:en"].positions == q4.positions
    assert q4.slices["ada"].positions == records[2]["positions"]


def test_reference_outputs_are_those_of_the_measured_cases_answered_at_the_first_attempt():
    from quantgate.evaluate.token_fidelity._run_step import reference_outputs
    from quantgate.rundir._lines import CaseRecord

    def record(case_id: str, **kwargs: Any) -> CaseRecord:
        return CaseRecord(variant="F16", case_id=case_id, **kwargs)

    records = {
        "a": record("a", raw='{"x": 1}', attempts=1),
        "b": record("b", raw='{"x": 2}', attempts=2),  # repaired: belongs to the repair prompt
        "c": record("c", raw='{"x": 3}', attempts=1, error="timeout"),
        "d": record("d", raw='{"x": 4}', attempts=1),  # answered, but not among the measured cases
        "e": record("e", raw='{"x": 5}', attempts=1),
    }
    assert reference_outputs(records, cases=["e", "a", "b", "c", "missing"]) == {
        "e": '{"x": 5}',
        "a": '{"x": 1}',
    }
