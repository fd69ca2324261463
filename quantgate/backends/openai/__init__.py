"""The OpenAI-compatible backend: a variant served by vLLM, llama.cpp's server, LM Studio, ...;
its chat and completion calls and the server's metadata."""
