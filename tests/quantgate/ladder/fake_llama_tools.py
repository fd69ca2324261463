"""Fake `llama-imatrix` and `llama-quantize` for the calibration tests: Python scripts that log
their arguments, write recognisable files, and fail or misbehave when an environment variable says;
and `write_matrix`, a ready-made importance matrix of a model (GGUF or legacy `.dat`)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import numpy as np

_COMMON = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *args]) + "\\n")
if args == ["--version"]:
    print("version: 4242 (fake)", file=sys.stderr)
    sys.exit(0)
mode = os.environ.get("FAKE_MODE", "")
def value(flag):
    return args[args.index(flag) + 1]
"""

IMATRIX = (
    _COMMON
    + """
if mode == "imatrix-fails":
    print("llama_model_load: error loading model\\nmain: you need at least 1024 tokens", file=sys.stderr)
    sys.exit(1)
import gguf, numpy as np
model = gguf.GGUFReader(value("-m"))
writer = gguf.GGUFWriter(value("-o"), "imatrix")
for tensor in model.tensors:
    name = tensor.name if mode != "other-model" else "blk.9." + tensor.name
    columns = int(tensor.shape[0])
    writer.add_tensor(name + ".in_sum2", np.ones((1, columns), dtype=np.float32))
    writer.add_tensor(name + ".counts", np.ones((1, 1), dtype=np.float32))
writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
"""
)

QUANTIZE = (
    _COMMON
    + """
imatrix, source, out, kind = value("--imatrix"), args[-3], args[-2], args[-1]
if mode == "quantize-fails" and kind == "Q2_K":
    print("llama_model_quantize: failed to quantize: unknown type Q2_K", file=sys.stderr)
    sys.exit(1)
if mode != "quantize-writes-nothing":
    open(out, "w").write(f"fake {kind} of {os.path.basename(source)} with {os.path.basename(imatrix)}")
"""
)


def install_fake_tools(directory: Path) -> Path:
    """Write the two fake tools into `directory`; return the log file they append their arguments to."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, script in (("llama-imatrix", IMATRIX), ("llama-quantize", QUANTIZE)):
        path = directory / name
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory / "calls.jsonl"


def write_fake_f16(path: Path, *, columns: int = 8) -> Path:
    """A tiny GGUF with two F16 weights (`columns` input columns each), standing in for the reference."""
    import gguf

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((4, columns), dtype=np.float16))
    writer.add_tensor("blk.0.ffn_down.weight", np.zeros((columns, columns), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_matrix(path: Path, model: Path, *, legacy: bool = False, prefix: str = "") -> Path:
    """An importance matrix of `model`'s tensors, as llama-imatrix writes it: a GGUF, or with `legacy`
    the `.dat` format (entries named `prefix` + the tensor's name: another model's with a prefix)."""
    import struct

    import gguf

    shapes = {t.name: int(t.shape[0]) for t in gguf.GGUFReader(model).tensors}
    if legacy:
        data = struct.pack("<i", len(shapes))
        for name, columns in shapes.items():
            encoded = (prefix + name).encode()
            data += struct.pack("<i", len(encoded)) + encoded + struct.pack("<ii", 10, columns)
            data += np.ones(columns, dtype="<f4").tobytes()
        path.write_bytes(data + struct.pack("<i", 10) + struct.pack("<i", 4) + b"wiki")
        return path
    writer = gguf.GGUFWriter(path, "imatrix")
    for name, columns in shapes.items():
        writer.add_tensor(prefix + name + ".in_sum2", np.ones((1, columns), dtype=np.float32))
        writer.add_tensor(prefix + name + ".counts", np.ones((1, 1), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
