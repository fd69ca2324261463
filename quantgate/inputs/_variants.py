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
    kv_cache = "q8_0"  # optional: K and V cache type; or { k = "q8_0", v = "f16" }

On the command line, shorthands `llamacpp:PATH.gguf`, `ollama:TAG` and `openai:MODEL@BASE_URL` (a
model on an OpenAI-compatible server) name one variant each; each backend reads its own (`Shorthand`).
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
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evaluators.errors import UsageError
from quantgate.inputs._dataset import validation_problems
from quantgate.inputs._file_hashes import file_sha256

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+\-]*")
"""A variant name, matched whole (`fullmatch`: `$` would let a final newline through)."""


MODEL_FILE_OPTION = "model_file"
"""The option that names the local GGUF a served variant's server loads, hashed for its `sha256` whatever
its backend (the served backends' options models name it: `ServedModelOptions`)."""


class VariantSpecError(UsageError):
    """A variant spec or variants file that cannot be used; the message says where and why."""


KVCacheType = Literal["f16", "q8_0", "q4_0"]
KV_CACHE_TYPES: tuple[KVCacheType, ...] = ("f16", "q8_0", "q4_0")
"""The KV-cache types a variant may name: llama.cpp's default (f16) and its two common quantized
caches (8.5 and 4.5 bits per value)."""


class KVCache(BaseModel):
    """The type of the attention cache's keys (`k`) and values (`v`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: KVCacheType
    v: KVCacheType

    def label(self) -> str:
        """`q8_0` when K and V share a type, else `K q8_0, V f16`."""
        return self.k if self.k == self.v else f"K {self.k}, V {self.v}"


def _kv_cache_table(value: Any) -> dict[str, Any]:
    """A `kv_cache` value as a `{k, v}` table: a type name applies to both.

    Raises:
        ValueError: Neither a known type name nor a table of exactly `k` and `v`.
    """
    known = ", ".join(f'"{t}"' for t in KV_CACHE_TYPES)
    form = f'one of {known} (K and V), or a table {{ k = "q8_0", v = "f16" }}'
    if isinstance(value, str):
        if value not in KV_CACHE_TYPES:
            raise ValueError(f"kv_cache {value!r}: must be {form}")
        return {"k": value, "v": value}
    if not isinstance(value, dict) or set(value) != {"k", "v"}:
        raise ValueError(f"kv_cache must be {form}; got {value!r}")
    wrong = {part: kind for part, kind in value.items() if kind not in KV_CACHE_TYPES}
    if wrong:
        raise ValueError(f"kv_cache {', '.join(f'{p} = {t!r}' for p, t in wrong.items())}: must be {form}")
    return value


CalibrationSource = Literal["dataset", "text", "file"]
"""What an importance matrix was computed from: a dataset's cases as the graph sends them
(`quantgate ladder --calibrate`, the team's own data), a general text file the user names
(`--calibrate-text`), or nothing quantgate saw: a ready-made matrix file (`--imatrix`)."""


class ImatrixCalibration(BaseModel):
    """A calibrated variant's importance matrix, as `quantgate ladder --calibrate` (or
    `--calibrate-text`, or `--imatrix`) made it: which dataset and how much of it (the case ids are
    in `file`, calibration.json, which a run reads to leave them out of scoring), which text file, or
    which ready-made matrix file, and which matrix and tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    source: CalibrationSource = Field(
        default="dataset",
        description="A dataset's cases (`--calibrate`), a general text file (`--calibrate-text`), or a "
        "ready-made matrix file (`--imatrix`).",
    )
    dataset: str = Field(description="The dataset's name, or the text file's or the matrix file's name.")
    dataset_sha256: str = Field(description="The dataset's sha256, or the text file's or the matrix file's.")
    cases: int = Field(ge=0, description="Calibration cases; 0 for a text file or a matrix file.")
    tokens: int | None = Field(
        default=None, ge=1, description="Tokens the matrix was computed from; None for a matrix file."
    )
    chunks: int | None = Field(
        default=None, ge=1, description="Chunks of the text llama-imatrix read; None for a matrix file."
    )
    imatrix_sha256: str
    tool_version: str | None = Field(
        default=None, description="llama-imatrix --version; None for a matrix file."
    )


class VariantSpec(BaseModel):
    """What identifies a model variant and its provenance: everything a run records of it.

    Attributes:
        name: Short unique name used in tables and file names (`Q4_K_M`, `gemma3-12b-q8`).
        backend: Which backend serves it: `llamacpp` (embedded), `ollama`, or `langchain`
            (a chat model object given from Python).
        model: What the backend loads: a GGUF path for `llamacpp`, a tag for `ollama`.
        quantization: Precision / quantization type as named by its tool (`F16`, `Q4_K_M`).
        method: How the weights were produced (e.g. `llama.cpp k-quant, post-training`).
        calibration: `none`, or what the importance matrix was computed from (a sentence).
        imatrix: A calibrated variant's importance matrix (`ImatrixCalibration`), None when it has none.
        source: The file the variant was derived from.
        source_sha256: That file's sha256.
        sha256: The model file's sha256.
        file_size_bytes: The model file's size.
        kv_cache: The attention cache's type (`KVCache`), None when the variant does not set it.
            A `llamacpp` variant's cache is made so (llama.cpp's default, f16, when None; flash
            attention is turned on for a quantized V cache, which llama.cpp requires). For
            `ollama` it is declared, not applied: the server's `OLLAMA_KV_CACHE_TYPE` sets one
            type for K and V, which its API does not report.
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
    imatrix: ImatrixCalibration | None = None
    source: str | None = None
    source_sha256: str | None = None
    sha256: str | None = None
    file_size_bytes: int | None = None
    kv_cache: KVCache | None = None
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

    @field_validator("kv_cache", mode="before")
    @classmethod
    def _kv_cache_form(cls, value: Any, info: ValidationInfo) -> Any:
        """A type name or a `{k, v}` table, refused with the variant's name when neither."""
        if value is None or isinstance(value, KVCache):
            return value
        try:
            return KVCache.model_validate(_kv_cache_table(value))
        except ValueError as exc:
            raise ValueError(f"variant {info.data.get('name')!r}: {exc}") from None


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
            raise ValueError(
                f"{value!r}: use letters, digits and _ . : + -, starting with a letter or digit "
                "(no spaces or slashes)"
            )
        return value

    @model_validator(mode="after")
    def _model_file_identity(self) -> Variant:
        """A served variant's `options.model_file` (the GGUF its server loads, when local) gives its
        `sha256` and `file_size_bytes` when the variant does not, so that the same file on two
        runtimes is recognised as such."""
        file = self.options.get(MODEL_FILE_OPTION)
        if file is None or self.sha256 is not None:
            return self
        path = Path(str(file)).expanduser()
        if not path.is_file():
            raise ValueError(f"variant {self.name!r}: options.model_file {file}: no such file")
        self.sha256 = file_sha256(path)
        self.file_size_bytes = path.stat().st_size
        return self

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


def unique_variants(variants: list[Variant], origins: list[str]) -> list[Variant]:
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


def file_origins(path: Path, count: int) -> list[str]:
    return [f"{path} (variants entry {number})" for number in range(1, count + 1)]


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
    unique_variants(variant_set.variants, file_origins(path, len(variant_set.variants)))
    if variant_set.reference and variant_set.reference not in {v.name for v in variant_set.variants}:
        raise VariantSpecError(f"{path}: reference {variant_set.reference!r} is not one of its variants")
    return variant_set


def write_variants_file(path: Path, variant_set: VariantSet) -> None:
    """Write a variants TOML file (None values are left out, as TOML has no null)."""
    document = variant_set.model_dump(mode="json", exclude_none=True)
    for variant in document["variants"]:
        variant.pop("chat_model", None)
        cache = variant.get("kv_cache")
        if cache and cache["k"] == cache["v"]:
            variant["kv_cache"] = cache["k"]
        if not variant.get("options"):
            variant.pop("options", None)
    path.write_text(tomli_w.dumps(document), encoding="utf-8")
