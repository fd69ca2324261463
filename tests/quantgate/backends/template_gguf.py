"""A copy of a GGUF with a chat template added to its metadata, and the templates the tests use.

The header is rewritten with one more key (`tokenizer.chat_template`) and the tensor data copied as
it is after the new header's alignment padding (tensor offsets are relative to the data's start).
Reading the header with the project's own cursor takes milliseconds, where `gguf.GGUFReader`
walks Gemma 3's 262k-token vocabulary for seconds.
"""

from __future__ import annotations

import mmap
import shutil
import struct
from pathlib import Path

from quantgate.inputs._gguf_files import _Header, _read_alignment

TOOLS_TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}<start_of_turn>user\nTools: {{ tools | tojson }}<end_of_turn>\n{% endif %}"
    "{% for message in messages %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
"""A small template in Gemma's turn markup that renders the tools it is given (a system turn is
kept as its own turn here), so that a test sees the tools reach the text."""

_STRING = 8


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _header_parts(view: mmap.mmap) -> tuple[int, int, int, int, int]:
    """(tensor count, metadata count, end of the metadata, end of the tensor infos, alignment)."""
    header = _Header(view, "<")
    header.take(8)
    tensor_count, kv_count = header.number("Q"), header.number("Q")
    alignment = _read_alignment(header, kv_count)
    kv_end = header.offset
    for _ in range(tensor_count):
        header.string()
        for _ in range(header.number("I")):
            header.number("Q")
        header.number("I"), header.number("Q")
    return tensor_count, kv_count, kv_end, header.offset, alignment


def with_chat_template(source: Path, out: Path, template: str) -> Path:
    """Write to `out` a copy of the little-endian GGUF at `source` whose metadata also holds
    `template` as its chat template."""
    with source.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        tensors, kvs, kv_end, infos_end, alignment = _header_parts(view)
        data_offset = -(-infos_end // alignment) * alignment
        added = _string("tokenizer.chat_template") + struct.pack("<I", _STRING) + _string(template)
        head = view[:8] + struct.pack("<QQ", tensors, kvs + 1) + view[24:kv_end] + added
        head += view[kv_end:infos_end]
        head += b"\0" * (-len(head) % alignment)
        with out.open("wb") as written:
            written.write(head)
            handle.seek(data_offset)
            shutil.copyfileobj(handle, written, 1 << 24)
    return out
