"""The Ollama backend: a variant served by an Ollama server, its calls, tools and metadata fields."""
