"""Token fidelity of OpenAI-compatible variants in a run: which pairs read the same prompt, the
forcing chosen by the declared logprobs API (not the backend's name), and a variant whose prompt
text is unknown reported as not measured with the reason."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage

import quantgate.evaluate.token_fidelity._run_step as fidelity_step
from quantgate.backends import BackendCapabilities, BackendError, OpenedVariant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._forcing import LogprobsForcing
from quantgate.backends.ollama._ollama_forcing import LOGPROBS_FORCING as OLLAMA_FORCING
from quantgate.backends.ollama._ollama_forcing import OllamaForcing
from quantgate.backends.openai._openai_forcing import CHAT_API_MEMBER, UNKNOWN_PROMPT, OpenAIForcing
from quantgate.backends.openai._openai_forcing import LOGPROBS_FORCING as OPENAI_FORCING
from quantgate.evaluate.token_fidelity._forcings import OPENAI_METHOD, forcing_problem, logprobs_forcing
from quantgate.evaluate.token_fidelity._pair_fidelity import pair_reason
from quantgate.evaluate.token_fidelity._run_step import token_fidelity_step, unmeasured_reason
from quantgate.inputs._variants import Variant
from quantgate.rundir._summary import VariantEntry

URL = "http://127.0.0.1:9/v1"


def served(name: str, api: str | None = None, backend: str = "openai") -> Variant:
    options: dict[str, Any] = {"base_url": URL}
    if api is not None:
        options["api"] = api
    return Variant(name=name, backend=backend, model=name.lower(), options=options)


def test_a_chat_variant_and_a_completions_reference_do_not_read_the_same_prompt():
    chat, completions = served("chat", "chat"), served("comp", "completions")
    reason = unmeasured_reason(chat, completions, enabled=True)
    assert reason == (
        'not measured: the reference reads its prompt through api = "completions" and this variant '
        'through api = "chat"; both must use the same api to read the same prompt'
    )
    assert 'this variant through api = "completions"' in (
        unmeasured_reason(completions, chat, enabled=True) or ""
    )
    assert unmeasured_reason(completions, served("ref", "completions"), enabled=True) is None
    assert unmeasured_reason(served("v"), chat, enabled=True) is None  # chat is the default api
    embedded = Variant(name="e", backend="llamacpp", model="e.gguf")
    assert "must be served by the same backend" in (
        unmeasured_reason(completions, embedded, enabled=True) or ""
    )


def test_a_variant_or_a_reference_with_native_tools_is_not_measured():
    from quantgate.backends.openai._openai_forcing import NATIVE_TOOLS_UNFOLLOWED

    native = Variant(name="n", backend="openai", model="n", options={"base_url": URL, "native_tools": True})
    assert unmeasured_reason(native, served("ref"), enabled=True) == NATIVE_TOOLS_UNFOLLOWED
    assert unmeasured_reason(served("v"), native, enabled=True) == NATIVE_TOOLS_UNFOLLOWED
    assert unmeasured_reason(served("v"), served("ref"), enabled=True) is None


def test_pairings_that_cannot_be_measured_say_why():
    ollama = Variant(name="q4", backend="ollama", model="gemma3:270m-q4_K_M")
    embedded = Variant(name="f16", backend="llamacpp", model=__file__)
    assert unmeasured_reason(ollama, ollama, enabled=True) is None
    assert unmeasured_reason(embedded, embedded, enabled=True) is None
    reason = unmeasured_reason(ollama, embedded, enabled=True)
    assert reason is not None
    assert "same backend" in reason
    assert "switched off" in (unmeasured_reason(ollama, ollama, enabled=False) or "")


@contextmanager
def _never_opened(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    raise AssertionError("not opened in these tests")
    yield


def test_the_forcing_follows_the_declared_logprobs_forcing_not_the_name(register_backend):
    register_backend(
        "my-vllm",
        _never_opened,
        capabilities=BackendCapabilities(token_fidelity="logprobs", logprobs_forcing=OPENAI_FORCING),
    )
    register_backend(
        "my-ollama",
        _never_opened,
        capabilities=BackendCapabilities(token_fidelity="logprobs", logprobs_forcing=OLLAMA_FORCING),
    )
    register_backend("silent", _never_opened, capabilities=BackendCapabilities(token_fidelity="logprobs"))

    forcing, method = logprobs_forcing(served("V", "completions", backend="my-vllm"))
    assert isinstance(forcing, OpenAIForcing)
    assert (forcing.base_url, forcing.model, method) == (URL, "v", OPENAI_METHOD)
    assert forcing.render is render_prompt  # api = "completions": the text quantgate renders
    chat_forcing, _ = logprobs_forcing(served("V", backend="my-vllm"))
    assert isinstance(chat_forcing, OpenAIForcing)
    assert chat_forcing.render is None  # the chat API: the server's template
    ollama = Variant(
        name="O", backend="my-ollama", model="gemma3:270m", options={"host": "http://127.0.0.1:9"}
    )
    assert isinstance(logprobs_forcing(ollama)[0], OllamaForcing)
    with pytest.raises(
        BackendError, match="no top-k forcing for the silent backend: it declares no logprobs_forcing"
    ):
        logprobs_forcing(served("S", backend="silent"))
    with pytest.raises(BackendError, match="api 'prompt' is not one of chat, completions"):
        logprobs_forcing(served("V", "prompt", backend="my-vllm"))


def _no_template(request: httpx.Request) -> httpx.Response:
    assert request.url.path == "/apply-template"  # nothing else is asked before measuring
    return httpx.Response(404, json={"detail": "Not Found"})


def test_a_forcing_without_prompt_text_is_a_problem_named_before_measuring():
    transport = httpx.MockTransport(_no_template)
    messages = [HumanMessage(content="Ana is 30.")]
    rendered = OpenAIForcing(base_url=URL, model="r", render=render_prompt, transport=transport)
    unknown = OpenAIForcing(base_url=URL, model="v", transport=transport)
    assert forcing_problem(served("R", "completions"), rendered, messages) is None
    assert forcing_problem(served("V"), unknown, messages) == UNKNOWN_PROMPT
    assert 'use api = "completions" or a server with /apply-template' in UNKNOWN_PROMPT

    ref, v, w = served("R", "completions"), served("V"), served("W", "completions")
    problems = fidelity_step._prompt_problems((ref, rendered), [(v, unknown), (w, rendered)], messages)
    assert problems == {"V": UNKNOWN_PROMPT}
    with pytest.raises(BackendError, match="the reference: the server's prompt text is unknown"):
        fidelity_step._prompt_problems((v, unknown), [(w, rendered)], messages)


def test_a_variant_not_measured_by_its_forcing_gets_the_reason_in_its_entry(
    register_backend, dataset, tmp_path: Path, monkeypatch
):
    register_backend(
        "srv",
        _never_opened,
        capabilities=BackendCapabilities(token_fidelity="logprobs", logprobs_forcing=OPENAI_FORCING),
    )
    reference, variant = served("ref", backend="srv"), served("v", backend="srv")
    record = type("Record", (), {"raw": '{"a": 1}', "attempts": 1, "error": None})()
    monkeypatch.setattr(fidelity_step, "read_records", lambda run_dir: [])
    monkeypatch.setattr(
        fidelity_step, "latest_records", lambda records: {"ref": {dataset.cases[0].id: record}}
    )
    monkeypatch.setitem(fidelity_step._MEASURES, "logprobs", lambda job: {"v": UNKNOWN_PROMPT})
    entries = [
        VariantEntry(name="ref", backend="srv", is_reference=True),
        VariantEntry(name="v", backend="srv"),
    ]
    token_fidelity_step(dataset=dataset, cases=dataset.cases, variants=[reference, variant],
                        reference_name="ref", entries=entries, run_dir=tmp_path, enabled=True,
                        max_repairs=0, progress=False)  # fmt: skip
    assert entries[1].token_fidelity is None
    assert entries[1].token_fidelity_missing == f"not measured: {UNKNOWN_PROMPT}"


def test_a_variant_whose_forcing_cannot_be_made_costs_only_its_own_figure(monkeypatch):
    monkeypatch.delenv("QG_UNSET_KEY", raising=False)
    options = {"base_url": URL, "api_key_env": "QG_UNSET_KEY"}  # names a variable that is not set
    bad = Variant(name="bad", backend="openai", model="b", options=options)
    forcings, problems = fidelity_step._variant_forcings([served("good", api="completions"), bad])
    assert list(forcings) == ["good"]
    assert isinstance(forcings["good"], OpenAIForcing)
    assert list(problems) == ["bad"]
    assert "QG_UNSET_KEY" in problems["bad"]


def test_whether_a_forcing_can_follow_and_be_a_pair_member_is_the_backends_answer(register_backend):
    toy = LogprobsForcing(
        make=lambda variant: OpenAIForcing(base_url=URL, model=variant.model, render=render_prompt),
        method="toy top-{k}",
        unfollowable=lambda forcing, messages: "the toy server hides its prompt",
    )
    register_backend(
        "toy-logprobs",
        _never_opened,
        capabilities=BackendCapabilities(token_fidelity="logprobs", logprobs_forcing=toy),
    )
    variant = Variant(name="T", backend="toy-logprobs", model="t")
    forcing, _ = logprobs_forcing(variant)
    messages = [HumanMessage(content="Ana is 30.")]
    # the same OpenAI-compatible forcing object: the toy backend's answer, not the forcing's type
    assert forcing_problem(variant, forcing, messages) == "the toy server hides its prompt"
    embedded = Variant(name="e", backend="llamacpp", model=__file__)
    assert pair_reason(embedded, variant) == (
        "not measured: the toy-logprobs backend declares no forcing of a runtime pair's member"
    )
    assert pair_reason(embedded, served("chat")) == f"not measured: {CHAT_API_MEMBER}"
    assert pair_reason(embedded, served("comp", "completions")) is None
