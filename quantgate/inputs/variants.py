"""Variants: a model as served by one backend, with everything needed to reproduce it.

A variant set lives in a TOML file (written by `quantgate ladder`, or by hand):

    format_version = 1
    reference = "F16"

    [[variants]]
    name = "F16"
    backend = "llamacpp"
    model = "/home/me/.cache/quantgate/ladder/gemma-3-270m-F16.gguf"
    quantization = "F16"
    method = "..."

On the command line, shorthands `llamacpp:PATH.gguf` and `ollama:TAG` name one variant each.
From Python, any LangChain chat model becomes a variant through `Variant.from_chat_model`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import tomli_w
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evaluators.errors import UsageError
from quantgate.inputs.dataset import validation_problems

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+\-]*")
"""A variant name, matched whole (`fullmatch`: `$` would let a final newline through)."""


class VariantSpecError(UsageError):
    """A variant spec or variants file that cannot be used; the message says where and why."""


class VariantSpec(BaseModel):
    """What identifies a model variant and its provenance: everything a run records of it.

    Attributes:
        name: Short unique name used in tables and file names (`Q4_K_M`, `gemma3-12b-q8`).
        backend: Which backend serves it: `llamacpp` (embedded), `ollama`, or `langchain`
            (a chat model object given from Python).
        model: What the backend loads: a GGUF path for `llamacpp`, a tag for `ollama`.
        quantization: Precision / quantization type as named by its tool (`F16`, `Q4_K_M`).
        method: How the weights were produced (e.g. `llama.cpp k-quant, post-training`).
        calibration: `none`, or the importance-matrix file used.
        source: The file the variant was derived from.
        source_sha256: That file's sha256.
        sha256: The model file's sha256.
        file_size_bytes: The model file's size.
        options: Backend options (`n_ctx`, `n_threads`, `num_ctx`, ...), recorded with the run.
        resources: What a Ray task evaluating the variant declares under `--executor ray`:
            `CPU`, `GPU`, `memory` (bytes) and custom resources such as `ollama`, so that it
            runs on a node that has them (`quantgate.cluster`; those not given get defaults).
            Ignored by the local executor.
        shards: Tasks a server variant's cases are split between under `--executor ray`
            (each on a node with its own server, the `resources` of each task as given);
            1, the default, keeps them in one task. Ignored by the local executor.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    backend: str
    model: str = ""
    quantization: str | None = None
    method: str | None = None
    calibration: str = "none"
    source: str | None = None
    source_sha256: str | None = None
    sha256: str | None = None
    file_size_bytes: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    resources: dict[str, float] = Field(default_factory=dict)
    shards: int = Field(default=1, ge=1)

    @field_validator("resources")
    @classmethod
    def _valid_resources(cls, value: dict[str, float]) -> dict[str, float]:
        wrong = [f"{name} = {amount}" for name, amount in value.items() if not 0 <= amount < float("inf")]
        if wrong:
            raise ValueError(f"resources must be numbers >= 0 ({', '.join(wrong)})")
        return value


class Variant(VariantSpec):
    """One model variant as a run uses it: its spec and, for the `langchain` backend only,
    the chat model itself (`chat_model`) or an embeddings object (`embeddings`), never serialized."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True, allow_inf_nan=False)

    chat_model: BaseChatModel | None = Field(default=None, exclude=True)
    embeddings: Embeddings | None = Field(default=None, exclude=True)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME_RE.fullmatch(value):
            raise ValueError(f"{value!r}: use letters, digits and _ . : + - (no spaces or slashes)")
        return value

    @classmethod
    def from_chat_model(cls, name: str, chat_model: BaseChatModel, **metadata: Any) -> Variant:
        """Wrap any LangChain chat model as a variant (its metadata is what you pass)."""
        return cls(name=name, backend="langchain", chat_model=chat_model, **metadata)

    @classmethod
    def from_embeddings(cls, name: str, embeddings: Embeddings, **metadata: Any) -> Variant:
        """Wrap any LangChain embeddings object as a variant, for `quantgate.embeddings`."""
        return cls(name=name, backend="langchain", embeddings=embeddings, **metadata)

    def record(self) -> dict[str, Any]:
        """The variant as written to `variants.json`."""
        return self.model_dump(mode="json", exclude={"chat_model", "embeddings"})


class VariantSet(BaseModel):
    """The contents of a variants TOML file (typed strictly: `shards = "2"` or `true` is refused)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    format_version: Literal[1] = 1
    reference: str | None = None
    variants: list[Variant]

    @model_validator(mode="after")
    def _one_grammar_engine(self) -> VariantSet:
        """Every variant of a run decodes under the same grammar engine, or the comparison is confounded."""
        engines = {_grammar_setting(v.options): v.name for v in self.variants}
        if len(engines) > 1:
            named = ", ".join(f"{name} uses {engine}" for engine, name in engines.items())
            raise ValueError(f"the variants must share one grammar_engine and fast_forward option ({named})")
        return self


def _grammar_setting(options: dict[str, Any]) -> str:
    """How a variant's options decode under the grammar, e.g. "llguidance with fast_forward"."""
    engine = str(options.get("grammar_engine", "the default"))
    return f"{engine} with fast_forward" if options.get("fast_forward") else engine


def _unique(variants: list[Variant], origins: list[str]) -> list[Variant]:
    """The variants, if no two share a name; `origins` says where each comes from, for the message."""
    first: dict[str, str] = {}
    for variant, origin in zip(variants, origins, strict=True):
        if variant.name in first:
            raise VariantSpecError(
                f"two variants are named {variant.name!r}: {first[variant.name]} and {origin}; "
                "names must be unique"
            )
        first[variant.name] = origin
    return variants


def _file_origins(path: Path, count: int) -> list[str]:
    return [f"{path} (variants entry {number})" for number in range(1, count + 1)]


def parse_spec(spec: str) -> Variant:
    """Read a `backend:model` shorthand (`llamacpp:PATH.gguf`, `ollama:gemma3:12b-it-q4_K_M`).

    Raises:
        VariantSpecError: Unknown backend, empty model, or a GGUF path that does not exist.
    """
    backend, sep, model = spec.partition(":")
    if not sep or not model:
        raise VariantSpecError(
            f"variant {spec!r}: expected BACKEND:MODEL, e.g. llamacpp:model.gguf or ollama:gemma3:12b, "
            "or a variants .toml file"
        )
    if backend == "llamacpp":
        path = Path(model).expanduser()
        if not path.is_file():
            raise VariantSpecError(f"variant {spec!r}: no GGUF file at {path}")
        stem = re.sub(r"[^A-Za-z0-9_.+\-]", "_", path.stem)
        return Variant(name=stem, backend="llamacpp", model=str(path.resolve()))
    if backend == "ollama":
        return Variant(name=re.sub(r"[^A-Za-z0-9_.:+\-]", "_", model), backend="ollama", model=model)
    raise VariantSpecError(f"variant {spec!r}: unknown backend {backend!r} (known: llamacpp, ollama)")


def load_variants_file(path: Path) -> VariantSet:
    """Read and validate a variants TOML file.

    Raises:
        VariantSpecError: Unreadable TOML or invalid entries; every error names its place.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise VariantSpecError(f"{path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise VariantSpecError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        variant_set = VariantSet.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(str(p) for p in validation_problems(exc, file=path.name, line=None))
        raise VariantSpecError(problems) from exc
    _unique(variant_set.variants, _file_origins(path, len(variant_set.variants)))
    if variant_set.reference and variant_set.reference not in {v.name for v in variant_set.variants}:
        raise VariantSpecError(f"{path}: reference {variant_set.reference!r} is not one of its variants")
    return variant_set


def resolve_variants(items: list[str]) -> VariantSet:
    """Turn CLI arguments (TOML files and shorthands, mixed) into one variant set.

    The reference is the first file's `reference`, if any.

    Raises:
        VariantSpecError: A bad file or shorthand, two variants of one name, or variants that
            cannot run together; the message names the files or shorthands.
    """
    variants: list[Variant] = []
    origins: list[str] = []
    reference: str | None = None
    for item in items:
        if item.endswith(".toml"):
            loaded = load_variants_file(Path(item))
            reference = reference or loaded.reference
            variants.extend(loaded.variants)
            origins.extend(_file_origins(Path(item), len(loaded.variants)))
        else:
            variants.append(parse_spec(item))
            origins.append(item)
    try:
        return VariantSet(reference=reference, variants=_unique(variants, origins))
    except ValidationError as exc:  # e.g. files that use different grammar engines
        problems = "; ".join(p.message for p in validation_problems(exc, file="", line=None))
        raise VariantSpecError(f"--variants {' '.join(items)}: {problems}") from exc


def write_variants_file(path: Path, variant_set: VariantSet) -> None:
    """Write a variants TOML file (None values are left out, as TOML has no null)."""
    document = variant_set.model_dump(mode="json", exclude_none=True)
    for variant in document["variants"]:
        variant.pop("chat_model", None)
        if not variant.get("options"):
            variant.pop("options", None)
    path.write_text(tomli_w.dumps(document), encoding="utf-8")
