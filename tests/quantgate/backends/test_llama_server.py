"""The OpenAI-compatible backend against llama.cpp's own `llama-server` (the session's
`llamacpp_server`: the ladder's Q4_K_M, `-c 2048 -t 2 --parallel 1 --metrics`), built by
scripts/install-llama-tools.sh: a run on `/v1/completions` with the schema's grammar, the server's
`/props` and `/metrics` in variants.json, and token fidelity from its `logprobs` on the completions
API and, through `/apply-template`, on the chat API. Skips when the tool is not built."""

import json
import math
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from quantgate.backends.openai._openai_forcing import OpenAIForcing
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate.token_fidelity._job import FidelityJob
from quantgate.evaluate.token_fidelity._run_step import measure_logprobs
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import FIDELITY_FILE
from quantgate.rundir._store import read_records
from quantgate.rundir._summary import TokenFidelityEntry

pytestmark = [pytest.mark.model, pytest.mark.slow]


def served(name: str, server, **options) -> Variant:
    return Variant(
        name=name, backend="openai", model=server.model, options={"base_url": server.url, **options}
    )


def test_a_run_on_the_completions_api_decodes_with_the_grammar_and_records_props_and_metrics(
    llamacpp_server, ladder, tmp_path
):
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    variant = served(
        "Q4_K_M-llama-server", llamacpp_server, api="completions", model_file=q4.model,
        extra_body={"repeat_penalty": 1.0}, max_tokens=160,
    )  # fmt: skip
    dataset = load_dataset("restaurants")
    options = RunOptions(limit=2, out=tmp_path, progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, VariantSet(variants=[variant]), options=options)

    runtime = json.loads((run_dir / "variants.json").read_text())["variants"][0]["runtime"]
    # the probe's grammar allowed only "zqxv": llama-server answered it, so /v1/completions reads `grammar`
    assert runtime["structured_output_probe"] == {"grammar": "enforced"}
    assert (runtime["api"], runtime["response_format"]) == ("completions", "grammar")
    assert runtime["decoding"].endswith("grammar field, enforced (probed)")
    assert runtime["server_models"] == ["q4_k_m"]
    assert runtime["model_listed"] is True
    props = runtime["props"]
    assert (props["n_ctx"], props["total_slots"]) == (llamacpp_server.CONTEXT, 1)
    assert props["model_path"] == q4.model
    assert len(props["chat_template_sha256"]) == 64  # the GGUF has none: the server's fallback's hash
    metrics = runtime["metrics"]
    # read after the probe (8 prompt tokens, up to 3 generated) on a server other tests may have used
    assert metrics["llamacpp:prompt_tokens_total"] >= 8
    assert metrics["llamacpp:tokens_predicted_total"] >= 2
    assert metrics["llamacpp:requests_processing"] == 0
    assert all(math.isfinite(value) for value in metrics.values())

    records = list(read_records(run_dir))
    assert len({r.case_id for r in records}) == len(records) == 2
    for record in records:
        assert record.error_kind is None
        jsonschema.validate(json.loads(record.raw or ""), dataset.schema)  # the grammar held every answer
        assert (record.ttft_s or 0) > 0


def test_token_fidelity_is_measured_on_both_apis_through_logprobs_and_apply_template(
    llamacpp_server, dataset: Dataset, tmp_path: Path
):
    # the tiny invoice set, one case; the target: its expected first field as a JSON object
    cases = tuple(dataset.cases[:1])
    outputs = {c.id: json.dumps(dict(list((c.expected or {}).items())[:1])) for c in cases}
    options = {"top_logprobs": 10, "timeout_s": 120}
    job = FidelityJob(
        reference=served("ref", llamacpp_server, api="completions", **options),
        variants=(served("same-file", llamacpp_server, api="completions", **options),),
        dataset=dataset, cases=cases, outputs=outputs, run_dir=tmp_path, max_repairs=0, progress=False,
    )  # fmt: skip
    # the chat API: llama-server has /apply-template, so its template's prompt text is known
    chat = replace(
        job,
        reference=served("ref", llamacpp_server, api="chat", **options),
        variants=(served("same-file", llamacpp_server, api="chat", **options),),
        run_dir=tmp_path / "chat",
    )
    chat.run_dir.mkdir()
    for measured in (job, chat):
        [(name, entry)] = measure_logprobs(measured).items()
        assert name == "same-file"
        assert isinstance(entry, TokenFidelityEntry), entry
        lines = [json.loads(line) for line in (measured.run_dir / FIDELITY_FILE).read_text().splitlines()]
        assert [(line["case_id"], line["error"], line["unobserved"]) for line in lines] == [
            (cases[0].id, None, 0)
        ]
        # the same model on the same server follows the same target: the same top-1, lists close.
        # Not as close as on llama_cpp.server (3.5e-5): the completions pair measured 2.9e-3 on
        # 2026-12-07. Probably (not measured) because llama-server reuses its prompt cache between
        # requests (`cache_n`), so the two walks evaluate the same positions in other batches.
        assert entry.positions == lines[0]["positions"] >= 4
        assert entry.kld_mean is not None
        assert math.isfinite(entry.kld_mean)
        assert 0 <= entry.kld_mean < 0.02, measured.reference.options["api"]
        assert entry.top1_agreement == 1.0


def test_llama_server_does_not_echo_so_an_echo_forcing_walks(llamacpp_server):
    forcing = OpenAIForcing(
        base_url=llamacpp_server.url, model=llamacpp_server.model, top_logprobs=5, echo=True,
        render=lambda messages: "The capital of France is",
    )  # fmt: skip
    followed = forcing.follow_text([], " the capital of France")
    # the echo request answered only the generated text: the forcing fell back to resumed completions
    assert (forcing.echo, forcing.way) == (False, "completions")
    assert "".join(followed.tokens) == " the capital of France"
    assert all(top and all(math.isfinite(lp) and lp <= 0 for lp in top.values()) for top in followed.top)
    first = followed.top[0]
    assert first is not None
    assert max(first, key=first.__getitem__) == " the"  # greedy: the server's own first token
