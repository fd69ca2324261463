"""The KV-cache type in variants.json (format 3; 1 and 2 still read) and in the decision's record."""

from __future__ import annotations

import json
from pathlib import Path

from quantgate.backends import kv_cache_note
from quantgate.decide._recommendation import decide
from quantgate.inputs._variants import KVCache
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import DECISION_JSON, DECISION_MD, VARIANTS_FILE
from quantgate.rundir._store import read_model, write_model
from quantgate.rundir._summary import VariantMetadata, VariantsFile
from tests.quantgate.run_factory import make_run


def test_variants_json_round_trips_the_kv_cache(tmp_path: Path) -> None:
    path = tmp_path / VARIANTS_FILE
    variants = [
        VariantMetadata.model_validate({"name": "a", "backend": "llamacpp", "kv_cache": "q8_0"}),
        VariantMetadata(name="b", backend="llamacpp", kv_cache=KVCache(k="q8_0", v="f16")),
        VariantMetadata.model_validate({"name": "c", "backend": "ollama", "kv_cache": "q4_0"}),
        VariantMetadata(name="d", backend="llamacpp"),
    ]
    write_model(path, VariantsFile(variants=variants))
    written = json.loads(path.read_text())
    assert written["format_version"] == 4
    assert [v["kv_cache"] for v in written["variants"]] == [
        {"k": "q8_0", "v": "q8_0"},
        {"k": "q8_0", "v": "f16"},
        {"k": "q4_0", "v": "q4_0"},
        None,
    ]
    read = read_model(path, VariantsFile).by_name()
    assert read["b"].kv_cache == KVCache(k="q8_0", v="f16")
    assert [kv_cache_note(read[n].backend, read[n].kv_cache) for n in "abcd"] == [
        "q8_0",
        "K q8_0, V f16",
        "q4_0 (declared)",
        "f16 (default)",
    ]


def test_variants_json_of_format_2_is_read_without_a_cache_type(tmp_path: Path) -> None:
    path = tmp_path / VARIANTS_FILE
    older = {"format_version": 2, "variants": [{"name": "a", "backend": "llamacpp", "placement": None}]}
    path.write_text(json.dumps(older))
    read = read_model(path, VariantsFile)
    assert read.format_version == 4
    assert read.variants[0].kv_cache is None


def test_the_decision_records_each_variants_cache_type(tmp_path: Path) -> None:
    run_dir = make_run(
        tmp_path / "run",
        {"R": [{"a": 1.0, "b": 1.0}] * 3, "Q": [{"a": 1.0, "b": 1.0}] * 3},
        footprints={"R": 2.0, "Q": 1.0},
    )
    variants = [
        VariantMetadata(name="R", backend="llamacpp", quantization="F16"),
        VariantMetadata(
            name="Q", backend="llamacpp", quantization="Q4_K_M", kv_cache=KVCache(k="q4_0", v="q4_0")
        ),
    ]
    write_model(run_dir / VARIANTS_FILE, VariantsFile(variants=variants))
    decide(run_dir)
    decision = read_model(run_dir / DECISION_JSON, Decision)
    assert decision.format_version == 9
    assert decision.record.variants["Q"].kv_cache == KVCache(k="q4_0", v="q4_0")
    markdown = (run_dir / DECISION_MD).read_text()
    assert "| variant | precision | method | calibration | KV cache | runtime |" in markdown
    assert r"| Q | Q4\_K\_M | — | none | q4\_0 |" in markdown  # markdown_table escapes underscores
    assert "| R | F16 | — | none | f16 (default) |" in markdown
