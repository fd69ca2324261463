"""A backend's options are typed: each backend's model reads a variant's `options`, a wrong value is one
error naming the variant and the key, and a plugin brings its own model through its entry point."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from quantgate.backends import (
    ENTRY_POINT_GROUP,
    OptionsError,
    backend_options,
    open_variant,
    options_of,
    options_problems,
    registered_backend,
    unregister_backend,
)
from quantgate.backends._backend_options import UncheckedOptions
from quantgate.backends.llamacpp._llamacpp_options import LlamaCppOptions
from quantgate.backends.ollama._ollama_options import DEFAULT_NUM_CTX, OllamaOptions
from quantgate.backends.openai._openai_options import OpenAIOptions
from quantgate.evaluate._evaluation_run import run_evaluation
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, write_tiny_dataset

PLUGIN = "quantgate_toy_plugin"

PLUGIN_SOURCE = '''
"""A backend from another package, with options of its own: answers every case with `answer`."""

from contextlib import contextmanager

from pydantic import Field

from quantgate.backends import BackendOptions, OpenedVariant, RegisteredBackend, options_of
from tests.fakes import QueuedChatModel


class ToyOptions(BackendOptions):
    answer: str
    max_output_tokens: int = Field(64, ge=1)


@contextmanager
def open_toy(variant, schema, *, slots=None):
    options = options_of(variant, ToyOptions)
    yield OpenedVariant(
        chat_model=QueuedChatModel(outputs=[options.answer]),
        runtime={"name": "toy", "max_output_tokens": options.max_output_tokens},
        max_output_tokens=options.max_output_tokens,
    )


TOY = RegisteredBackend(name="toy", open=open_toy, options=ToyOptions)
'''


@pytest.fixture
def toy_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy backend installed as pip would leave it: its module and a `.dist-info` naming it."""
    (tmp_path / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    dist_info = tmp_path / "quantgate_toy_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: quantgate-toy-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntoy = {PLUGIN}:TOY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    unregister_backend("toy")
    sys.modules.pop(PLUGIN, None)


def test_a_toy_backend_with_its_own_options_runs_a_case_end_to_end(toy_plugin: Path, tmp_path: Path):
    answer = json.dumps(GOOD)
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant(name=name, backend="toy", options={"answer": answer, "max_output_tokens": "32"})
            for name in ("ref", "cand")
        ],
    )
    dataset = load_dataset(write_tiny_dataset(tmp_path / "d"))
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False, limit=1)
    run = load_run(run_evaluation(dataset, variants, options=options))
    entries = {entry.name: entry for entry in run.summary.variants}
    assert [(e.name, e.status, e.cases, e.format_validity, e.errors) for e in entries.values()] == [
        ("ref", "ok", 1, 1.0, 0),
        ("cand", "ok", 1, 1.0, 0),
    ]
    assert [v.runtime for v in run.variants.variants] == [{"name": "toy", "max_output_tokens": 32}] * 2
    typed = backend_options(variants.variants[0])
    assert type(typed).__name__ == "ToyOptions"
    assert typed.max_output_tokens == 32  # type: ignore[attr-defined]  # "32" read as the int it is


def test_a_toy_backend_option_of_the_wrong_type_names_the_variant_and_the_key(toy_plugin: Path):
    variant = Variant(name="q4", backend="toy", options={"answer": "{}", "max_output_tokens": 0})
    with pytest.raises(OptionsError) as raised:
        open_variant(variant, SCHEMA)
    assert str(raised.value) == (
        "variant 'q4': options.max_output_tokens: Input should be greater than or equal to 1 (got 0)"
    )
    with pytest.raises(OptionsError, match=r"^variant 'q5': options.answer: Field required \(got \{\}\)$"):
        open_variant(Variant(name="q5", backend="toy"), SCHEMA)


@pytest.mark.parametrize(
    ("backend", "options", "said"),
    [
        ("ollama", {"timeout_s": "soon"},
         "options.timeout_s: Input should be a valid number, unable to parse string as a number "
         "(got 'soon')"),
        ("ollama", {"num_ctx": 0, "top_logprobs": 50},
         "options.num_ctx: Input should be greater than or equal to 1 (got 0); "
         "options.top_logprobs: Input should be less than or equal to 20 (got 50)"),
        ("openai", {"base_url": "http://127.0.0.1:9/v1", "max_tokens": "many"},
         "options.max_tokens: Input should be a valid integer, unable to parse string as an integer "
         "(got 'many')"),
        ("llamacpp", {"n_ctx": "big"},
         "options.n_ctx: Input should be a valid integer, unable to parse string as an integer (got 'big')"),
    ],
)  # fmt: skip
def test_a_built_in_backend_refuses_a_wrong_option_before_opening(backend, options, said):
    variant = Variant(name="v1", backend=backend, model="m", options=options)
    with pytest.raises(OptionsError) as raised:
        open_variant(variant, SCHEMA)
    assert str(raised.value) == f"variant 'v1': {said}"


def test_the_built_in_models_give_the_defaults():
    ollama = backend_options(Variant(name="o", backend="ollama", model="g:1b", options={"keep_alive": -1}))
    assert isinstance(ollama, OllamaOptions)
    assert (ollama.num_ctx, ollama.max_tokens, ollama.keep_alive, ollama.top_logprobs) == (
        DEFAULT_NUM_CTX,
        512,
        -1,
        20,
    )
    served = Variant(name="s", backend="openai", model="m", options={"base_url": "http://h/v1", "seed": "7"})
    openai = backend_options(served)
    assert isinstance(openai, OpenAIOptions)
    assert (openai.api, openai.seed, openai.response_format, openai.logprobs_echo) == (
        "chat",
        7,
        "auto",
        False,
    )
    embedded = options_of(
        Variant(name="e", backend="llamacpp", model="m.gguf", options=EMBEDDED), LlamaCppOptions
    )
    assert embedded.engine_options() == {"n_ctx": 4096, "grammar_engine": "llguidance"}
    assert embedded.engine_options(generation=False) == {"n_ctx": 4096}  # teacher forcing: no grammar
    assert embedded.cpu_threads() is None


EMBEDDED = {
    "n_ctx": 4096,
    "grammar_engine": "llguidance",
    "pooling": "cls",
    "max_retries": 1,
    "max_tokens": 9,
}
"""An embedded variant's options of which only `n_ctx` and `grammar_engine` are the engine's keywords."""


@pytest.mark.parametrize(
    ("backend", "misspelt", "accepted"),
    [
        ("llamacpp", "n_ctxx",
         "chat_template, embedding_n_ctx, fast_forward, flash_attn, grammar_engine, max_array_items, "
         "max_retries, max_tokens, n_ctx, n_threads, pooling, retry_backoff_s, score_labels, seed, slots"),
        ("ollama", "num_ctxx",
         "first_token_timeout_s, host, keep_alive, max_retries, max_tokens, model_file, notice_every_s, "
         "num_ctx, num_keep, retry_backoff_s, seed, timeout_s, top_logprobs"),
        ("openai", "api_keyenv",
         "api, api_key_env, base_url, extra_body, first_token_timeout_s, logprobs_echo, max_retries, "
         "max_tokens, model_file, native_tools, response_format, retry_backoff_s, seed, timeout_s, "
         "top_logprobs, verify"),
    ],
)  # fmt: skip
def test_an_unknown_option_of_a_built_in_names_the_variant_the_key_and_the_accepted_keys(
    backend, misspelt, accepted
):
    variant = Variant(name="q4", backend=backend, model="m", options={misspelt: 4096})
    with pytest.raises(OptionsError) as raised:
        open_variant(variant, SCHEMA)  # refused before the backend opens anything
    assert str(raised.value) == (
        f"variant 'q4': options.{misspelt}: not an option of the {backend} backend (it accepts: {accepted})"
    )
    assert raised.value.keys == (misspelt,)
    assert options_problems([variant, Variant(name="ok", backend=backend, model="m")]) == [str(raised.value)]


def test_a_backend_that_declares_no_options_model_keeps_every_key(tmp_path: Path):
    served = tmp_path / "m.gguf"
    served.write_bytes(b"GGUF")
    with registered_backend("plain", open_variant) as record:
        variant = Variant(name="p", backend="plain", options={"anything": 1, "model_file": str(served)})
        options = backend_options(variant)
        assert record.options is UncheckedOptions
        assert options.model_extra == {"anything": 1, "model_file": str(served)}
        assert options.served_model_file() == str(served)  # hashed by `Variant` whatever the backend
        assert options_problems([variant]) == []
    assert options_problems([Variant(name="u", backend="not-registered", options={"x": 1})]) == []
