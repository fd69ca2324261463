"""The `kv_cache` option of a variant: its two forms, bad values, and llama.cpp's parameters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluators.errors import UsageError
from quantgate.backends import BackendError, kv_cache_note, kv_cache_problem, open_variant
from quantgate.backends.llamacpp._kv_cache import kv_cache_params
from quantgate.cli._common import check_variant_files
from quantgate.inputs._variants import (
    KVCache,
    Variant,
    VariantSet,
    VariantSpecError,
    load_variants_file,
    write_variants_file,
)

ENTRY = '[[variants]]\nname = "q4"\nbackend = "{backend}"\nmodel = "m.gguf"\n'


def _file(tmp_path: Path, line: str, backend: str = "llamacpp") -> Path:
    path = tmp_path / "variants.toml"
    path.write_text(ENTRY.format(backend=backend) + line + "\n")
    return path


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('kv_cache = "q8_0"', KVCache(k="q8_0", v="q8_0")),
        ('kv_cache = "f16"', KVCache(k="f16", v="f16")),
        ('kv_cache = { k = "q8_0", v = "f16" }', KVCache(k="q8_0", v="f16")),
        ("", None),
    ],
)
def test_a_type_name_sets_k_and_v_and_a_table_sets_each(tmp_path: Path, line: str, expected) -> None:
    assert load_variants_file(_file(tmp_path, line)).variants[0].kv_cache == expected


@pytest.mark.parametrize(
    ("line", "backend", "message"),
    [
        (
            'kv_cache = "q5_0"',
            "llamacpp",
            r"variants\[0\]\.kv_cache: variant 'q4': kv_cache 'q5_0': must be one of",
        ),
        (
            'kv_cache = { k = "q8_0" }',
            "llamacpp",
            r"variant 'q4': kv_cache must be one of .* got \{'k': 'q8_0'\}",
        ),
        (
            'kv_cache = { k = "q8_0", v = "q2" }',
            "llamacpp",
            r"variant 'q4': kv_cache v = 'q2': must be one of",
        ),
        ("kv_cache = 8", "llamacpp", "variant 'q4': kv_cache must be one of"),
    ],
)
def test_bad_values_name_the_file_the_variant_and_the_field(tmp_path: Path, line, backend, message) -> None:
    with pytest.raises(VariantSpecError, match=rf"^variants\.toml: .*{message}"):
        load_variants_file(_file(tmp_path, line, backend))


def test_a_k_quantized_cache_keeps_flash_attention_off_as_requested(tmp_path: Path) -> None:
    path = _file(tmp_path, 'kv_cache = { k = "q8_0", v = "f16" }\noptions = { flash_attn = false }')
    assert load_variants_file(path).variants[0].kv_cache == KVCache(k="q8_0", v="f16")


@pytest.mark.parametrize(
    ("line", "backend", "message"),
    [
        (
            'kv_cache = { k = "q8_0", v = "f16" }',
            "ollama",
            "variant 'q4': kv_cache K q8_0, V f16: the ollama server sets one type for K and V "
            '(Ollama: OLLAMA_KV_CACHE_TYPE); declare one, e.g. kv_cache = "q8_0"',
        ),
        (
            'kv_cache = "q4_0"\noptions = { flash_attn = false }',
            "llamacpp",
            "variant 'q4': kv_cache q4_0: llama.cpp needs flash attention for a quantized V cache; "
            "remove options.flash_attn = false",
        ),
    ],
)
def test_a_cache_the_backend_cannot_take_is_refused_before_any_model_loads(
    tmp_path: Path, line, backend, message
) -> None:
    """The backend's `kv_cache` capability says what it takes: the command line checks it with the
    model files, and opening the variant from Python checks it again."""
    variants = load_variants_file(_file(tmp_path, line, backend))
    assert kv_cache_problem(variants.variants[0]) == message
    with pytest.raises(UsageError, match=re.escape(message)):
        check_variant_files(variants)
    with pytest.raises(BackendError, match=re.escape(message)):
        open_variant(variants.variants[0], {})


def test_ollama_declares_one_type(tmp_path: Path) -> None:
    variant = load_variants_file(_file(tmp_path, 'kv_cache = "q8_0"', "ollama")).variants[0]
    assert kv_cache_problem(variant) is None
    assert kv_cache_note(variant.backend, variant.kv_cache) == "q8_0 (declared)"
    assert kv_cache_note("ollama", None) == "not declared"
    assert kv_cache_note("llamacpp", None) == "f16 (default)"


def test_the_variants_file_writes_one_type_as_a_name_and_two_as_a_table(tmp_path: Path) -> None:
    variants = [
        Variant.model_validate({"name": "a", "backend": "llamacpp", "model": "m", "kv_cache": "q4_0"}),
        Variant(name="b", backend="llamacpp", model="m", kv_cache=KVCache(k="q8_0", v="f16")),
    ]
    path = tmp_path / "v.toml"
    write_variants_file(path, VariantSet(variants=variants))
    text = path.read_text()
    assert 'kv_cache = "q4_0"' in text
    assert [v.kv_cache for v in load_variants_file(path).variants] == [v.kv_cache for v in variants]


@pytest.mark.parametrize(
    ("cache", "flash_attn", "default", "expected"),
    [
        (None, None, False, (1, 1, False)),  # GGML_TYPE_F16 = 1 (ggml.h)
        (
            KVCache(k="q8_0", v="q8_0"),
            None,
            False,
            (8, 8, True),
        ),  # GGML_TYPE_Q8_0 = 8: V needs flash attention
        (KVCache(k="q4_0", v="q4_0"), None, True, (2, 2, True)),  # GGML_TYPE_Q4_0 = 2
        (KVCache(k="q8_0", v="f16"), None, False, (8, 1, False)),  # a quantized K alone does not
        (KVCache(k="q8_0", v="f16"), True, False, (8, 1, True)),
    ],
)
def test_llama_cpp_parameters_of_a_cache(cache, flash_attn, default, expected) -> None:
    pytest.importorskip("llama_cpp")
    params = kv_cache_params(cache, flash_attn=flash_attn, default_flash_attn=default)
    assert (params.type_k, params.type_v, params.flash_attn) == expected


def test_flash_attention_turned_off_with_a_quantized_v_cache_is_refused() -> None:
    pytest.importorskip("llama_cpp")
    with pytest.raises(ValueError, match="a quantized V cache needs flash attention"):
        kv_cache_params(KVCache(k="f16", v="q8_0"), flash_attn=False, default_flash_attn=False)
