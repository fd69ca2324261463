"""TEST DOUBLE of an Ollama server. It is not Ollama.

No Ollama binary can run where quantgate is developed, so the tests talk HTTP to this
stand-in, which speaks the documented Ollama REST protocol with real inference: llama.cpp
through quantgate's embedded engine, on real GGUF files. langchain-ollama's and the ollama
client's real code therefore runs end to end.

- `server.py`: the endpoints (`/api/chat` streaming NDJSON and not, with `format` as a JSON
  schema, `logprobs` and `top_logprobs`; `/api/generate` to load and unload; `/api/show`,
  `/api/ps`, `/api/tags`, `/api/version`), errors inside a stream, and the faults tests inject
  through `POST /_double/faults` (not part of Ollama's API);
- `embed.py`: `/api/embed` (llama.cpp's embedding mode, mean-pooled, vectors L2-normalized as
  Ollama returns them);
- `tools.py`: a chat with `tools` answered by rules a test sets per model (`POST
  /_double/tool_answers`), and the chats received with `tools` (`GET /_double/tool_requests`);
  a chat's messages decoded as Ollama's `api.Message` (assistant `tool_calls`, `tool` messages),
  refused with 400 when Ollama could not decode them;
- `logprobs.py`: the log-probabilities returned with each generated token;
- `models.py`: the served models: names with `:latest` assumed, loading, `keep_alive`, the
  context window (`num_ctx`, its default, prompts cut to fit);
- `queue.py`: requests served `num_parallel` at a time per model, up to `max_queue` waiting,
  then refused with 503, as Ollama's scheduler does.

Each documented behaviour carries a comment naming its source. Where it differs from a real
server: one model is loaded at a time (OLLAMA_MAX_LOADED_MODELS=1), a model serves one
request at a time (OLLAMA_NUM_PARALLEL=1), messages are rendered with quantgate's few-shot
completion prompt (`render_prompt`), not the model's chat template, and `size_vram` is 0, as
a CPU-only server reports.

    python -m tests.ollama_double --model gemma3:270m-q4_K_M=/path/model.gguf [--port 0]

prints `listening on http://127.0.0.1:PORT` once ready.
"""
