"""A GGUF's metadata, read from its header: what the memory model needs of a model file.

The file is first checked as `quantgate.inputs._gguf_files.read_gguf_layout` checks it (there,
readable, a GGUF llama.cpp reads, complete), so a bad file gets the same message as before a run.
Scalars and strings are read as values, short arrays of numbers (a per-layer head count) as
lists; an array of strings or of more than `LONG_ARRAY` items (the vocabulary, its scores) is
counted, not read: its key maps to its length.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from quantgate.inputs._gguf_files import ModelFileError, _Header, _PastTheEndError, read_gguf_layout

_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
"""GGUF metadata value types of fixed size, as `struct` codes (uint8 ... float64, bool)."""
_STRING, _ARRAY = 8, 9

LONG_ARRAY = 1024
"""Arrays longer than this are counted, not read."""

MetadataValue = int | float | bool | str | list[int | float | bool]


def _scalar(header: _Header, kind: int) -> int | float | bool:
    code = _FORMATS[kind]
    start = header.take(struct.calcsize(code))
    value: int | float | bool = struct.unpack_from(header.order + code, header.view, start)[0]
    return value


def _value(header: _Header, kind: int) -> MetadataValue:
    if kind in _FORMATS:
        return _scalar(header, kind)
    if kind == _STRING:
        return header.string().decode("utf-8", errors="replace")
    item = header.number("I")
    count = header.number("Q")
    if item in _FORMATS and count <= LONG_ARRAY:
        return [_scalar(header, item) for _ in range(count)]
    header.offset -= 12  # read the array's item type again: step over the whole array
    count_at = header.offset + 4
    header.skip_value(_ARRAY)
    return int(struct.unpack_from(header.order + "Q", header.view, count_at)[0])


def read_gguf_metadata(path: Path) -> dict[str, MetadataValue]:
    """The metadata of the GGUF at `path`, key by key (`general.architecture`, `gemma3.block_count`, ...).

    Raises:
        ModelFileError: Missing or unreadable, not a GGUF, a version llama.cpp does not read,
            corrupt or truncated; the message names `path`.
    """
    layout = read_gguf_layout(path)
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            order = "<" if struct.unpack_from("<I", view, 4)[0] == layout.version else ">"
            header = _Header(view, order)
            header.take(16)  # magic, version, tensor count
            metadata: dict[str, MetadataValue] = {}
            for _ in range(header.number("Q")):
                key = header.string().decode("utf-8", errors="replace")
                metadata[key] = _value(header, header.number("I"))
            return metadata
    except _PastTheEndError as exc:
        raise ModelFileError(f"{path} is corrupt: its metadata runs past byte {exc.needed:,}") from None
    except OSError as exc:
        raise ModelFileError(f"{path} cannot be read: {exc.strerror or exc}") from None
