"""Ollama Modelfiles for the ladder's GGUF files, so the exact files evaluated embedded can be
served by Ollama and evaluated again there (`quantgate ollama modelfiles DIR`)."""

from __future__ import annotations

from pathlib import Path

from quantgate.backends import capabilities
from quantgate.inputs._variants import VariantSet

# The embedded backend's prompt (quantgate.backends._base_prompt.render_prompt) as an Ollama
# template: system text, then "Text:" / "JSON:" turns, ending with "JSON:" for the answer. A final
# assistant message is left open, as the test double does and as Ollama's own templates do with
# `$last`, so token fidelity can prefill the reference's output
# (quantgate.backends.ollama._ollama_forcing).
TEMPLATE = (
    "{{- range $i, $_ := .Messages }}{{- $last := eq (len (slice $.Messages $i)) 1 }}"
    '{{- if eq .Role "system" }}{{ .Content }}\n\n'
    '{{ else if eq .Role "user" }}Text:\n{{ .Content }}\nJSON:'
    '{{ else if eq .Role "assistant" }}{{ if $last }}{{ .Content }}{{ else }} {{ .Content }}\n\n{{ end }}'
    "{{ end }}{{- end }}"
)


def ollama_tag(variant_name: str, model_stem: str = "gemma3-270m-quantgate") -> str:
    """The tag a ladder file gets in Ollama, e.g. `gemma3-270m-quantgate:q4_k_m`."""
    return f"{model_stem}:{variant_name.lower()}"


def modelfile(gguf: Path, *, num_ctx: int = 8192, num_predict: int = 512, seed: int = 0) -> str:
    """A Modelfile serving `gguf` with the embedded evaluation's prompt format and decoding."""
    return "\n".join(
        [
            f"FROM {gguf.resolve()}",
            f'TEMPLATE """{TEMPLATE}"""',
            "PARAMETER temperature 0",
            f"PARAMETER seed {seed}",
            f"PARAMETER num_ctx {num_ctx}",
            f"PARAMETER num_predict {num_predict}",
            "",
        ]
    )


def write_modelfiles(variant_set: VariantSet, directory: Path) -> list[tuple[Path, str]]:
    """Write one Modelfile per file-backed variant; return (path, `ollama create` command) pairs.

    A variant with a `kv_cache` gets none: it shares its weight file with another, and Ollama
    sets the cache type for the whole server (`OLLAMA_KV_CACHE_TYPE`), not per model."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for variant in variant_set.variants:
        if not capabilities(variant).model_file or variant.kv_cache is not None:
            continue
        path = directory / f"{variant.name}.Modelfile"
        path.write_text(modelfile(Path(variant.model)), encoding="utf-8")
        written.append((path, f"ollama create {ollama_tag(variant.name)} -f {path}"))
    return written
