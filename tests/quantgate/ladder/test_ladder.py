from pathlib import Path

import pytest

from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import load_variants_file
from quantgate.ladder._quantize import LadderError, build_ladder, quantize_gguf

pytestmark = pytest.mark.model


def test_ladder_files_and_metadata(ladder):
    names = [v.name for v in ladder.variants]
    assert names == ["F16", "Q8_0", "Q4_K_M"]
    assert ladder.reference == "F16"
    sizes = {v.name: v.file_size_bytes for v in ladder.variants}
    assert sizes["F16"] > sizes["Q8_0"] > sizes["Q4_K_M"]
    for variant in ladder.variants:
        assert variant.sha256 is not None
        assert variant.source_sha256 is not None
        assert variant.calibration == "none"
        assert variant.method
    assert "F16 expansion of a 4-bit file" in ladder.variants[0].method


def test_ladder_is_idempotent_and_rebuilds_a_damaged_file(ladder):
    q4 = Path(next(v for v in ladder.variants if v.name == "Q4_K_M").model)
    directory = q4.parent
    before = {p.name: p.stat().st_mtime_ns for p in directory.glob("*.gguf")}
    again, variants_file = build_ladder(quants=["Q8_0", "Q4_K_M"], out=directory, progress=False)
    after = {p.name: p.stat().st_mtime_ns for p in directory.glob("*.gguf")}
    assert before == after  # nothing rebuilt
    assert [v.sha256 for v in again.variants] == [v.sha256 for v in ladder.variants]
    assert load_variants_file(variants_file).model_dump() == again.model_dump()
    expected = file_sha256(q4)
    with q4.open("r+b") as handle:  # damage it
        handle.seek(1000)
        handle.write(b"\0" * 64)
    rebuilt, _ = build_ladder(quants=["Q4_K_M"], out=directory, progress=False)
    assert file_sha256(q4) == expected
    assert [v.name for v in rebuilt.variants] == ["F16", "Q4_K_M"]


def test_failed_quantization_leaves_no_partial_file(ladder, tmp_path):
    target = tmp_path / "bad.gguf"
    with pytest.raises(LadderError, match="unknown quantization"):
        quantize_gguf(tmp_path / "x.gguf", target, "Q9_Z")
    with pytest.raises(LadderError, match="failed with code"):
        quantize_gguf(tmp_path / "missing.gguf", target, "Q8_0")
    assert not target.exists()
    not_a_model = tmp_path / "junk.gguf"
    not_a_model.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(LadderError):
        build_ladder(source=not_a_model, quants=["Q8_0"], out=tmp_path / "out", progress=False)
    assert not list((tmp_path / "out").glob("*.partial"))
