"""The quantization ladder: variants made locally from one GGUF file, Ollama Modelfiles, and llama.cpp's
own tools (llama-quantize, llama-imatrix, ...) found where scripts/install-llama-tools.sh built them."""

from quantgate.ladder._llama_tools import (
    LlamaTool,
    LlamaToolError,
    LlamaTools,
    LlamaToolsManifest,
    find_llama_tools,
    llama_tool,
)
from quantgate.ladder._ollama_modelfiles import write_modelfiles
from quantgate.ladder._quantize import LadderError, build_ladder, default_ladder_dir

__all__ = [
    "LadderError",
    "LlamaTool",
    "LlamaToolError",
    "LlamaTools",
    "LlamaToolsManifest",
    "build_ladder",
    "default_ladder_dir",
    "find_llama_tools",
    "llama_tool",
    "write_modelfiles",
]
