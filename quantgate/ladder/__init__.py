"""The quantization ladder: variants made locally from one GGUF file, and Ollama Modelfiles."""

from quantgate.ladder.build import LadderError, build_ladder, default_ladder_dir
from quantgate.ladder.ollama_modelfiles import write_modelfiles

__all__ = [
    "LadderError",
    "build_ladder",
    "default_ladder_dir",
    "write_modelfiles",
]
