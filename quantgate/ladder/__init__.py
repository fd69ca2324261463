"""The quantization ladder: variants made locally from one GGUF file, and Ollama Modelfiles."""
