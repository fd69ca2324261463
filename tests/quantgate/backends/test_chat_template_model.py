"""The `chat_template` option on the real embedded model: a run of the tool-calls dataset (2 cases) with
the session ladder's F16 and Q4_K_M, each copied with a chat template that renders the tools. The
prompt each case's first attempt read is the template rendered independently here, the answers are
grammar-valid records scored as tool calls, token fidelity reads the same prompt, and variants.json
names the template by its sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._store import load_run
from tests.quantgate.backends.template_gguf import TOOLS_TEMPLATE, with_chat_template
from tests.quantgate.backends.test_chat_template import _first_case, _rendered_here

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def templated_ladder(ladder: VariantSet, tmp_path_factory: pytest.TempPathFactory) -> VariantSet:
    """F16 and Q4_K_M copied with `TOOLS_TEMPLATE`, the option on."""
    folder = tmp_path_factory.mktemp("templated-ladder")
    chosen = [v for v in ladder.variants if v.name in ("F16", "Q4_K_M")]
    copies = [
        v.model_copy(
            update={
                "model": str(with_chat_template(Path(v.model), folder / Path(v.model).name, TOOLS_TEMPLATE)),
                "options": {**v.options, "chat_template": True},
                "sha256": None,
                "file_size_bytes": None,
            }
        )
        for v in chosen
    ]
    return VariantSet(reference="F16", variants=copies)


def test_a_run_with_the_chat_template_reads_it_and_scores_tool_calls(templated_ladder, tmp_path) -> None:
    import llama_cpp

    dataset = load_dataset("tool-calls")
    options = RunOptions(limit=2, out=tmp_path, progress=False, sequential=False)
    run = load_run(run_evaluation(dataset, templated_ladder, options=options))

    tools = json.loads((dataset.path / "task.json").read_text(encoding="utf-8"))["tools"]
    template_sha = hashlib.sha256(TOOLS_TEMPLATE.encode()).hexdigest()
    for variant in run.variants.variants:
        assert variant.runtime is not None
        assert variant.runtime["chat_template_sha256"] == template_sha
    llama = llama_cpp.Llama(templated_ladder.variants[0].model, vocab_only=True, verbose=False)
    try:
        first = dataset.cases[0]
        expected = _rendered_here(TOOLS_TEMPLATE, _first_case(dataset), tools)
        expected_tokens = len(llama.tokenize(expected.encode(), add_bos=False, special=True))
    finally:
        llama.close()
    records = list(run.records())
    assert len(records) == 4
    for record in records:
        assert record.format_valid, record.validation_errors  # the grammar held the answer to the schema
        assert json.loads(record.raw or "")["call"] is None or "name" in json.loads(record.raw or "")["call"]
        if record.case_id == first.id and record.attempts == 1:
            assert record.input_tokens == expected_tokens  # the template's text, tools included
    for entry in run.summary.variants:
        assert entry.kind_figures is not None
        assert entry.kind_figures.model_dump()["tool_call_cases"] == 2
    (q4,) = [v for v in run.summary.variants if v.name == "Q4_K_M"]
    assert q4.token_fidelity is not None
    assert q4.token_fidelity.positions > 0
