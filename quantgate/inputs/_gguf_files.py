"""The model files embedded variants name, checked before any model loads.

A run opens each variant's GGUF only when its turn comes, so a bad file would show up after the
earlier variants have run. `check_model_files` checks them all up front: each is there and
readable, a GGUF (magic `GGUF`, version 2 or 3, as llama.cpp reads), not truncated (its tensor
infos say where the tensor data ends), and of the size and sha256 its variant gives, if any.
Hashes are cached by (resolved path, mtime, size): see `quantgate.inputs._file_hashes`.

Only the header is read, parsed here from a memory map with every read checked against the end
of the file: `gguf.GGUFReader` walks a 262k-token vocabulary element by element (17 s for a
Gemma 3 270M file on two busy cores, against 40 ms here) and fails on a truncated file with an
indexing or reshaping error. gguf's table of tensor types gives each tensor's size.
"""

from __future__ import annotations

import math
import mmap
import os
import stat
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.errors import QuantgateError
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import Variant, VariantSpecError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
"""The GGUF versions llama.cpp reads (version 1 is no longer supported)."""

_MAX_DIMS = 4  # GGML_MAX_DIMS: llama.cpp refuses tensors of more dimensions
_STRING, _ARRAY, _UINT32 = 8, 9, 4
_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""GGUF metadata value types of fixed size (uint8 ... float64, bool), in bytes."""


class ModelFileError(VariantSpecError):
    """A model file that cannot be used as its variant says; the message names the variant, the file
    and the problem."""


@dataclass(frozen=True, kw_only=True)
class GGUFLayout:
    """What a GGUF's header says of the file, and how large the file is.

    Attributes:
        version: The GGUF version.
        tensor_count: Tensors the header describes.
        data_offset: Where the tensor data starts.
        expected_size: Where the last tensor's data ends: the least size of a complete file.
        file_size: The file's size.
    """

    version: int
    tensor_count: int
    data_offset: int
    expected_size: int
    file_size: int


class _PastTheEndError(QuantgateError):
    """A header read that needs bytes beyond the end of the file."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class _CorruptError(QuantgateError):
    """A header value no valid GGUF has."""


class _Header:
    """A cursor over a GGUF header in a memory map; every read is checked against the end."""

    def __init__(self, view: mmap.mmap, order: str) -> None:
        self.view, self.order, self.offset, self.size = view, order, 0, len(view)

    def take(self, count: int) -> int:
        """Step over `count` bytes; their start."""
        start = self.offset
        if start + count > self.size:
            raise _PastTheEndError(start + count)
        self.offset += count
        return start

    def number(self, code: str) -> int:
        """One unsigned integer of `struct` code `code` (`I`: uint32, `Q`: uint64)."""
        start = self.take(struct.calcsize(code))
        return int(struct.unpack_from(self.order + code, self.view, start)[0])

    def string(self) -> bytes:
        length = self.number("Q")
        start = self.take(length)
        return self.view[start : start + length]

    def skip_value(self, kind: int) -> None:
        """Step over one metadata value of type `kind`."""
        if kind in _SCALAR_SIZES:
            self.take(_SCALAR_SIZES[kind])
        elif kind == _STRING:
            self.take(self.number("Q"))
        elif kind == _ARRAY:
            self._skip_array()
        else:
            raise _CorruptError(f"unknown metadata value type {kind} before byte {self.offset:,}")

    def _skip_array(self) -> None:
        item, count = self.number("I"), self.number("Q")
        if item in _SCALAR_SIZES:
            self.take(count * _SCALAR_SIZES[item])
        elif item == _STRING:  # a tokenizer's vocabulary: hundreds of thousands of strings
            length = struct.Struct(self.order + "Q").unpack_from
            offset = self.offset
            for _ in range(count):
                if offset + 8 > self.size:
                    raise _PastTheEndError(offset + 8)
                offset += 8 + length(self.view, offset)[0]
            self.take(offset - self.offset)
        elif item == _ARRAY:
            if count * 12 > self.size - self.offset:  # each one at least its type and count
                raise _PastTheEndError(self.offset + count * 12)
            for _ in range(count):
                self._skip_array()
        else:
            raise _CorruptError(f"unknown array item type {item} before byte {self.offset:,}")


def _tensor_bytes(name: bytes, kind: int, dims: list[int]) -> int:
    """The size of a tensor's data, from its type's block size (gguf's table of ggml types)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    label = name.decode(errors="replace")
    try:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    except (ValueError, KeyError):
        raise _CorruptError(
            f"tensor {label!r} has type {kind}, which the gguf package does not know"
        ) from None
    elements = math.prod(dims)
    if elements % block_size:
        raise _CorruptError(f"tensor {label!r}: {elements} elements are not whole blocks of {block_size}")
    return elements // block_size * type_size


def _read_alignment(header: _Header, kv_count: int) -> int:
    """Walk the header's `kv_count` metadata keys; their `general.alignment` (GGUF's default, 32,
    when none is given). The header is left at the first tensor's info."""
    alignment = 32
    for _ in range(kv_count):
        key, kind = header.string(), header.number("I")
        if key == b"general.alignment" and kind == _UINT32:
            alignment = header.number("I")
        else:
            header.skip_value(kind)
    return alignment


def _parse_header(header: _Header) -> tuple[int, int, int]:
    """(tensor count, data offset, end of the tensor data) of a header past its magic and version."""
    tensor_count, kv_count = header.number("Q"), header.number("Q")
    if kv_count * 12 > header.size or tensor_count * 24 > header.size:
        raise _CorruptError(f"it claims {kv_count:,} metadata keys and {tensor_count:,} tensors")
    alignment = _read_alignment(header, kv_count)
    if alignment <= 0 or alignment & (alignment - 1):
        raise _CorruptError(f"general.alignment is {alignment}, not a power of two")
    data_end = 0
    for _ in range(tensor_count):
        name, n_dims = header.string(), header.number("I")
        if n_dims > _MAX_DIMS:
            raise _CorruptError(f"tensor {name.decode(errors='replace')!r} has {n_dims} dimensions")
        dims = [header.number("Q") for _ in range(n_dims)]
        kind, offset = header.number("I"), header.number("Q")
        data_end = max(data_end, offset + _tensor_bytes(name, kind, dims))
    data_offset = -(-header.offset // alignment) * alignment
    return tensor_count, data_offset, data_offset + data_end


def _not_gguf(path: Path, head: bytes) -> ModelFileError:
    if head.startswith(b"version https://git-lfs"):
        return ModelFileError(f"{path} is a Git LFS pointer, not the model file (fetch it with git lfs pull)")
    if head.lstrip()[:1] == b"<":
        return ModelFileError(f"{path} is not a GGUF file: it looks like an HTML page (a failed download?)")
    return ModelFileError(f"{path} is not a GGUF file: it starts with {head[:4]!r}, not {GGUF_MAGIC!r}")


def _sizes(actual: int, expected: int) -> str:
    """`50 MB of 241 MB`, in bytes when megabytes would not tell them apart."""
    if round(actual / 1e6) == round(expected / 1e6):
        return f"{actual:,} of {expected:,} bytes"
    return f"{actual / 1e6:,.0f} MB of {expected / 1e6:,.0f} MB"


def _open_problem(path: Path) -> str | None:
    """Why `path` cannot be opened as a file, or None."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            return f"{path} is a directory, not a GGUF file"
        if not stat.S_ISREG(mode):  # a pipe or a device: opening it could wait for ever
            return f"{path} is not a regular file"
        with path.open("rb"):
            return None
    except FileNotFoundError:
        return f"no GGUF file at {path}"
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror or exc}"


def read_gguf_layout(path: Path) -> GGUFLayout:
    """Check that `path` is a complete GGUF file and say what its header describes.

    Only the header is read (through a memory map); the tensor data is not touched.

    Raises:
        ModelFileError: Missing or unreadable, not a GGUF, a version llama.cpp does not read,
            a corrupt header, or truncated ("truncated: 50 MB of 241 MB"); the message names `path`.
    """
    problem = _open_problem(path)
    if problem is not None:
        raise ModelFileError(problem)
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(64)
            if size == 0:
                raise ModelFileError(f"{path} is empty (0 bytes), not a GGUF file")
            if not head.startswith(GGUF_MAGIC):
                raise _not_gguf(path, head)
            if size < 24:  # magic, version, tensor count, metadata count
                raise ModelFileError(f"{path} is truncated: {size} bytes, less than a GGUF header")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
                return _layout(path, view)
    except OSError as exc:  # a read error
        raise ModelFileError(f"{path} cannot be read: {exc.strerror or exc}") from None


def _layout(path: Path, view: mmap.mmap) -> GGUFLayout:
    order = "<"
    version = struct.unpack_from("<I", view, 4)[0]
    if version & 0xFFFF == 0:  # written on a machine of the other byte order
        order, version = ">", struct.unpack_from(">I", view, 4)[0]
    if version not in SUPPORTED_VERSIONS:
        supported = " and ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise ModelFileError(f"{path} is GGUF version {version}; llama.cpp reads versions {supported}")
    header = _Header(view, order)
    header.take(8)
    try:
        tensor_count, data_offset, expected = _parse_header(header)
    except _PastTheEndError as exc:
        raise ModelFileError(
            f"{path} is truncated or corrupt: its header runs past the end of the file "
            f"(it needs byte {exc.needed:,}, the file has {header.size:,})"
        ) from None
    except _CorruptError as exc:
        raise ModelFileError(f"{path} is a corrupt GGUF: {exc}") from None
    if tensor_count == 0:
        raise ModelFileError(f"{path} has no tensors: a GGUF without weights (vocabulary only?)")
    if header.size < expected:
        raise ModelFileError(
            f"{path} is truncated: {_sizes(header.size, expected)} (an interrupted download or copy?)"
        )
    return GGUFLayout(
        version=version,
        tensor_count=tensor_count,
        data_offset=data_offset,
        expected_size=expected,
        file_size=header.size,
    )


def _file_problem(variant: Variant) -> str | None:
    """What is wrong with a variant's model file, short of its sha256; None when nothing is."""
    if not variant.model:
        return f"variant {variant.name}: no model file given (its `model` is empty)"
    path = Path(variant.model)
    try:
        layout = read_gguf_layout(path)
    except ModelFileError as exc:
        return f"variant {variant.name}: {exc}"
    if variant.file_size_bytes is not None and variant.file_size_bytes != layout.file_size:
        return (
            f"variant {variant.name}: {path} has {layout.file_size:,} bytes, "
            f"the variants file says {variant.file_size_bytes:,} (file_size_bytes)"
        )
    return None


def _sha256_problem(variant: Variant, cache_file: Path | None) -> str | None:
    if not variant.sha256:
        return None
    path = Path(variant.model)
    try:
        actual = file_sha256(path, cache_file=cache_file)
    except OSError as exc:
        return f"variant {variant.name}: {path} cannot be read: {exc.strerror or exc}"
    if actual == variant.sha256.strip().lower():
        return None
    return f"variant {variant.name}: sha256 of {path} is {actual}, the variants file says {variant.sha256}"


def check_model_files(
    variants: Sequence[Variant], *, verify_sha256: bool = True, cache_file: Path | None = None
) -> None:
    """Check the model files of embedded variants, all of them, before any model loads.

    Args:
        variants: The variants whose `model` is a local GGUF file (their backend's `model_file`
            capability).
        verify_sha256: Also compare each file with the `sha256` its variant gives (cached hashes).
        cache_file: The sha256 cache (default: `default_hash_cache()`).

    Raises:
        ModelFileError: One or more files missing, unreadable, not GGUF, corrupt, truncated, of
            another size or sha256 than the variant says; every problem names its variant and file.
    """
    problems = [problem for variant in variants if (problem := _file_problem(variant))]
    if not problems and verify_sha256:
        problems = [problem for variant in variants if (problem := _sha256_problem(variant, cache_file))]
    if problems:
        raise ModelFileError("; ".join(problems))
