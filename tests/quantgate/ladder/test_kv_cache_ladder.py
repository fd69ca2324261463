"""`quantgate ladder --kv-cache`: variants that share a weight file and differ in their KV cache.

The build is faked (the F16 expansion and each quantization copy bytes), so these run without
llama.cpp; the real build is tested in test_ladder.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quantgate.cli._main import main
from quantgate.inputs._variants import KVCache, Variant, VariantSet, load_variants_file
from quantgate.ladder import _quantize as quantize
from quantgate.ladder._kv_cache_variants import KVCacheLadderError, with_kv_cache_variants
from quantgate.ladder._ollama_modelfiles import write_modelfiles


def _weights() -> VariantSet:
    names = ["F16", "Q8_0", "Q4_K_M"]
    variants = [Variant(name=n, backend="llamacpp", model=f"/m/{n}.gguf", quantization=n) for n in names]
    return VariantSet(reference="F16", variants=variants)


def test_each_quantization_gets_a_variant_per_cache_type_after_it() -> None:
    made = with_kv_cache_variants(_weights(), ["q8_0", "q4_0"])
    assert [v.name for v in made.variants] == [
        "F16", "Q8_0", "Q8_0-kv-q8_0", "Q8_0-kv-q4_0", "Q4_K_M", "Q4_K_M-kv-q8_0", "Q4_K_M-kv-q4_0",
    ]  # fmt: skip
    by_name = {v.name: v for v in made.variants}
    assert by_name["Q4_K_M-kv-q4_0"].kv_cache == KVCache(k="q4_0", v="q4_0")
    assert by_name["Q4_K_M-kv-q4_0"].model == "/m/Q4_K_M.gguf"
    assert by_name["Q4_K_M-kv-q4_0"].quantization == "Q4_K_M"
    assert by_name["Q4_K_M"].kv_cache is None
    assert made.reference == "F16"


def test_kv_cache_of_chooses_the_weight_types_the_reference_included() -> None:
    made = with_kv_cache_variants(_weights(), ["q8_0"], of=["F16", "Q4_K_M"])
    assert [v.name for v in made.variants] == ["F16", "F16-kv-q8_0", "Q8_0", "Q4_K_M", "Q4_K_M-kv-q8_0"]


@pytest.mark.parametrize(
    ("types", "of", "message"),
    [
        (["q5_0"], None, "--kv-cache q5_0: use q8_0 or q4_0"),
        (["f16"], None, "f16 is the cache every weight variant already uses"),
        (["q8_0"], ["Q2_K"], r"--kv-cache-of Q2_K: not a weight type of this ladder \(F16, Q8_0, Q4_K_M\)"),
    ],
)
def test_bad_kv_cache_requests_are_refused(types: list[str], of: list[str] | None, message: str) -> None:
    with pytest.raises(KVCacheLadderError, match=message):
        with_kv_cache_variants(_weights(), types, of)


def _fake_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantize, "dequantize_to_f16", lambda source, out, progress: shutil.copy(source, out))
    monkeypatch.setattr(quantize, "quantize_gguf", lambda source, out, quant: out.write_bytes(quant.encode()))


def test_cli_writes_the_kv_cache_variants_in_the_variants_file(tmp_path: Path, monkeypatch, capsys) -> None:
    _fake_build(monkeypatch)
    source = tmp_path / "model.gguf"
    source.write_bytes(b"GGUF weights")
    out = tmp_path / "ladder"
    args = ["ladder", "--source", str(source), "--quants", "Q8_0,Q4_K_M", "--out", str(out)]
    assert main([*args, "--kv-cache", "q8_0,q4_0", "--kv-cache-of", "Q4_K_M"]) == 0
    written = load_variants_file(out / "variants.toml")
    names = [v.name for v in written.variants]
    assert names == ["F16", "Q8_0", "Q4_K_M", "Q4_K_M-kv-q8_0", "Q4_K_M-kv-q4_0"]
    by_name = {v.name: v for v in written.variants}
    assert by_name["Q4_K_M-kv-q8_0"].model == str(out / "model-Q4_K_M.gguf")
    assert by_name["Q4_K_M-kv-q8_0"].sha256 == by_name["Q4_K_M"].sha256
    assert by_name["Q4_K_M-kv-q4_0"].kv_cache == KVCache(k="q4_0", v="q4_0")
    assert (
        'kv_cache = "q4_0"' in (out / "variants.toml").read_text()
    )  # one type for K and V, as written by hand
    assert "KV cache q8_0" in capsys.readouterr().out


def test_cli_refuses_a_bad_cache_type_before_building(tmp_path: Path, monkeypatch, capsys) -> None:
    _fake_build(monkeypatch)
    source = tmp_path / "model.gguf"
    source.write_bytes(b"GGUF weights")
    out = tmp_path / "ladder"
    assert main(["ladder", "--source", str(source), "--out", str(out), "--kv-cache", "q4_1"]) != 0
    assert "--kv-cache q4_1: use q8_0 or q4_0" in capsys.readouterr().err
    assert not out.exists()


def test_kv_cache_variants_get_no_modelfile_of_their_own(tmp_path: Path) -> None:
    written = write_modelfiles(with_kv_cache_variants(_weights(), ["q8_0"]), tmp_path)
    assert [path.name for path, _ in written] == ["F16.Modelfile", "Q8_0.Modelfile", "Q4_K_M.Modelfile"]
