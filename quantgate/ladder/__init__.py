"""The quantization ladder: variants made locally from one GGUF file, and Ollama Modelfiles."""

from quantgate.ladder._ollama_modelfiles import write_modelfiles
from quantgate.ladder._quantize import LadderError, build_ladder, default_ladder_dir

__all__ = [
    "LadderError",
    "build_ladder",
    "default_ladder_dir",
    "write_modelfiles",
]
