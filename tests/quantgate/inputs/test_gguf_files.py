"""The model-file checks: GGUF structure, truncation, size and sha256, and the sha256 cache."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFReader

import quantgate.inputs._file_hashes as file_hashes
import quantgate.inputs._gguf_files as gguf_files
from quantgate.inputs._file_hashes import HASH_CACHE_ENV, Sha256Cache, default_hash_cache, file_sha256
from quantgate.inputs._gguf_files import ModelFileError, check_model_files, read_gguf_layout
from quantgate.inputs._variants import Variant, VariantSpecError
from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    return write_tiny_gguf(tmp_path / "tiny.gguf")


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "sha256.json"


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files actually read to hash them, in order."""
    read: list[Path] = []
    real = file_hashes._hash_file

    def counting(path: Path) -> str:
        read.append(path)
        return real(path)

    monkeypatch.setattr(file_hashes, "_hash_file", counting)
    return read


def _variant(path: Path, name: str = "Q4_K_M", **fields: object) -> Variant:
    return Variant.model_validate({"name": name, "backend": "llamacpp", "model": str(path), **fields})


def _copy(source: Path, destination: Path, size: int) -> Path:
    destination.write_bytes(source.read_bytes()[:size])
    return destination


@pytest.mark.parametrize("big_endian", [False, True], ids=["little-endian", "big-endian"])
def test_the_layout_is_what_gguf_reader_reads(tmp_path, big_endian):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", big_endian=big_endian)
    layout = read_gguf_layout(path)
    reader = GGUFReader(path)
    assert layout.version == 3
    assert layout.tensor_count == len(reader.tensors) == 2
    assert layout.data_offset == reader.data_offset
    assert layout.data_offset % 64 == 0  # the file's general.alignment, not the default 32
    assert layout.expected_size == max(t.data_offset + t.n_bytes for t in reader.tensors)
    assert layout.file_size == path.stat().st_size >= layout.expected_size


def test_a_file_cut_in_its_tensor_data_is_truncated(gguf_file, tmp_path):
    expected = read_gguf_layout(gguf_file).expected_size
    cut = _copy(gguf_file, tmp_path / "cut.gguf", expected - 10)
    with pytest.raises(ModelFileError) as raised:
        read_gguf_layout(cut)
    assert str(raised.value) == (
        f"{cut} is truncated: {expected - 10:,} of {expected:,} bytes (an interrupted download or copy?)"
    )


def test_a_file_cut_in_its_header_is_truncated(gguf_file, tmp_path):
    cut = _copy(gguf_file, tmp_path / "cut.gguf", 100)
    with pytest.raises(ModelFileError, match=r"cut\.gguf is truncated or corrupt: its header runs past"):
        read_gguf_layout(cut)
    tiny = _copy(gguf_file, tmp_path / "short.gguf", 12)
    with pytest.raises(ModelFileError, match=r"short\.gguf is truncated: 12 bytes, less than a GGUF header"):
        read_gguf_layout(tiny)


def test_sizes_in_megabytes_when_they_differ_by_a_megabyte_or_more():
    assert gguf_files._sizes(50_000_000, 241_000_000) == "50 MB of 241 MB"
    assert gguf_files._sizes(240_999_000, 241_000_000) == "240,999,000 of 241,000,000 bytes"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty \\(0 bytes\\), not a GGUF file"),
        (b"PK\x03\x04 a zip file", "is not a GGUF file: it starts with b'PK\\\\x03\\\\x04', not b'GGUF'"),
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\n", "is a Git LFS pointer"),
        (b"<!DOCTYPE html><html>Not found</html>", "is not a GGUF file: it looks like an HTML page"),
        (b"GGUF" + struct.pack("<I", 1) + bytes(32), "is GGUF version 1; llama.cpp reads versions 2 and 3"),
        (b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<I", 99),
         "is a corrupt GGUF: unknown metadata value type 99"),
        (b"GGUF" + struct.pack("<IQQ", 3, 2**40, 0) + bytes(64), "is a corrupt GGUF: it claims"),
    ],
    ids=["empty", "zip", "git-lfs", "html", "version-1", "value-type", "counts"],
)  # fmt: skip
def test_files_that_are_not_gguf(tmp_path, content, message):
    path = tmp_path / "model.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match=f"^{tmp_path}/model.gguf {message}"):
        read_gguf_layout(path)


def test_random_bytes_after_a_valid_start_are_reported_not_crashed_on(gguf_file, tmp_path):
    noise = random.Random(15).randbytes(4096)
    for keep in (8, 24, 40):  # magic and version; and the counts; and part of the first key
        path = tmp_path / f"noise-{keep}.gguf"
        path.write_bytes(gguf_file.read_bytes()[:keep] + noise)
        with pytest.raises(ModelFileError, match=f"^{path} is (truncated or corrupt|a corrupt GGUF)"):
            read_gguf_layout(path)


def test_a_gguf_without_tensors_is_no_model(tmp_path):
    path = write_tiny_gguf(tmp_path / "vocab.gguf", tensors=False)
    with pytest.raises(ModelFileError, match=r"vocab\.gguf has no tensors"):
        read_gguf_layout(path)


@pytest.mark.unprivileged  # root reads any file: as root, it runs without that privilege
def test_missing_directory_and_unreadable_files(tmp_path, gguf_file):
    with pytest.raises(ModelFileError, match=f"^no GGUF file at {tmp_path}/nope.gguf$"):
        read_gguf_layout(tmp_path / "nope.gguf")
    with pytest.raises(ModelFileError, match=f"^{tmp_path} is a directory, not a GGUF file$"):
        read_gguf_layout(tmp_path)
    gguf_file.chmod(0)
    try:
        with pytest.raises(ModelFileError, match=f"^{gguf_file} cannot be read: Permission denied$"):
            read_gguf_layout(gguf_file)
    finally:
        gguf_file.chmod(0o644)


def test_a_file_the_user_may_not_read(gguf_file, monkeypatch):
    real_open = Path.open

    def denied(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == gguf_file:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)  # as if not readable (root reads any file)
    with pytest.raises(ModelFileError, match=f"^{gguf_file} cannot be read: Permission denied$"):
        read_gguf_layout(gguf_file)


def test_check_model_files_names_every_bad_variant(gguf_file, tmp_path, cache_file):
    cut = _copy(gguf_file, tmp_path / "cut.gguf", 500)
    expected, size = read_gguf_layout(gguf_file).expected_size, gguf_file.stat().st_size
    variants = [
        _variant(gguf_file, "F16"),
        _variant(tmp_path / "gone.gguf", "Q8_0"),
        _variant(cut, "Q4_K_M"),
        _variant(gguf_file, "Q2_K", file_size_bytes=123),
    ]
    with pytest.raises(ModelFileError) as raised:
        check_model_files(variants, cache_file=cache_file)
    assert isinstance(raised.value, VariantSpecError)  # a bad input: exit status 2 on the command line
    assert str(raised.value).split("; ") == [
        f"variant Q8_0: no GGUF file at {tmp_path}/gone.gguf",
        f"variant Q4_K_M: {cut} is truncated: 500 of {expected} bytes (an interrupted download or copy?)",
        f"variant Q2_K: {gguf_file} has {size} bytes, the variants file says 123 (file_size_bytes)",
    ]
    with pytest.raises(ModelFileError, match=r"^variant x: no model file given"):
        check_model_files([Variant(name="x", backend="llamacpp")], cache_file=cache_file)
    check_model_files([variants[0]], cache_file=cache_file)  # a good file passes


def test_a_wrong_sha256_is_named_with_both_hashes(gguf_file, cache_file):
    actual = hashlib.sha256(gguf_file.read_bytes()).hexdigest()
    wrong = "0" * 64
    with pytest.raises(ModelFileError) as raised:
        check_model_files([_variant(gguf_file, sha256=wrong)], cache_file=cache_file)
    assert str(raised.value) == (
        f"variant Q4_K_M: sha256 of {gguf_file} is {actual}, the variants file says {wrong}"
    )
    check_model_files([_variant(gguf_file, sha256=actual.upper())], cache_file=cache_file)


def test_the_sha256_is_checked_only_once_the_files_are_sound(gguf_file, tmp_path, cache_file, hashes):
    bad = [_variant(gguf_file, sha256="0" * 64), _variant(tmp_path / "gone.gguf", "Q8_0")]
    with pytest.raises(ModelFileError, match=r"^variant Q8_0: no GGUF file"):
        check_model_files(bad, cache_file=cache_file)
    assert hashes == []  # no seconds spent hashing when a run cannot start anyway
    check_model_files([_variant(gguf_file, sha256="0" * 64)], verify_sha256=False, cache_file=cache_file)
    assert hashes == []


def test_hashes_are_cached_until_the_file_changes(gguf_file, cache_file, hashes):
    expected = hashlib.sha256(gguf_file.read_bytes()).hexdigest()
    assert file_sha256(gguf_file, cache_file=cache_file) == expected
    assert file_sha256(gguf_file, cache_file=cache_file) == expected
    assert hashes == [gguf_file.resolve()]  # the second call did not read the file
    cache = Sha256Cache.model_validate_json(cache_file.read_text())
    entry = cache.files[str(gguf_file.resolve())]
    assert (entry.sha256, entry.size, entry.mtime_ns) == (
        expected,
        gguf_file.stat().st_size,
        gguf_file.stat().st_mtime_ns,
    )

    stat = gguf_file.stat()
    os.utime(gguf_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched: same size
    assert file_sha256(gguf_file, cache_file=cache_file) == expected
    assert len(hashes) == 2
    gguf_file.write_bytes(gguf_file.read_bytes() + b"\0")
    os.utime(gguf_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # same mtime, new size
    assert file_sha256(gguf_file, cache_file=cache_file) == hashlib.sha256(gguf_file.read_bytes()).hexdigest()
    assert len(hashes) == 3


def test_a_symlink_shares_its_targets_cache_entry(gguf_file, tmp_path, cache_file, hashes):
    link = tmp_path / "link.gguf"
    link.symlink_to(gguf_file)
    assert file_sha256(gguf_file, cache_file=cache_file) == file_sha256(link, cache_file=cache_file)
    assert len(hashes) == 1


def test_a_broken_cache_is_rebuilt_and_gone_files_leave_it(gguf_file, tmp_path, cache_file, hashes):
    cache_file.parent.mkdir()
    cache_file.write_text("{not json")
    file_sha256(gguf_file, cache_file=cache_file)
    other = shutil.copy(gguf_file, tmp_path / "other.gguf")
    file_sha256(Path(other), cache_file=cache_file)
    assert len(Sha256Cache.model_validate_json(cache_file.read_text()).files) == 2
    Path(other).unlink()
    gguf_file.touch()  # a new mtime: hashed again, and the cache rewritten without other.gguf
    file_sha256(gguf_file, cache_file=cache_file)
    assert list(Sha256Cache.model_validate_json(cache_file.read_text()).files) == [str(gguf_file.resolve())]
    assert len(hashes) == 3


def test_a_cache_that_cannot_be_written_is_skipped(gguf_file, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    digest = file_sha256(gguf_file, cache_file=blocker / "sha256.json")  # its directory cannot be made
    assert digest == hashlib.sha256(gguf_file.read_bytes()).hexdigest()


def test_the_cache_location(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv(HASH_CACHE_ENV, raising=False)
    assert default_hash_cache() == platformdirs.user_cache_path("quantgate") / "sha256.json"
    monkeypatch.setenv(HASH_CACHE_ENV, str(tmp_path / "mine.json"))
    assert default_hash_cache() == tmp_path / "mine.json"
