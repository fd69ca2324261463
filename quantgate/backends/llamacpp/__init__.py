"""The embedded backend: llama.cpp in this process, and the engine under it (slots, batches, grammars,
greedy decoding, teacher forcing, label scores, log-probabilities, embeddings).

Importing this package loads nothing of llama.cpp; its modules load the bindings when used.
"""
