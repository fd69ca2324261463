"""Typed lines of the run directory's JSONL files: records.jsonl, fidelity.jsonl, load.jsonl,
noise_floor.jsonl.

Each model is the one definition of its line: the writer builds it, every reader parses
through it, and `quantgate schemas` exports its JSON Schema.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from evaluators.json_tokens import TokenKind
from evaluators.loadtest import LoadRequest
from evaluators.verification import Obtained
from quantgate.rundir._files import (
    LOAD_FORMAT_VERSION,
    NOISE_FLOOR_FORMAT_VERSION,
    RECORDS_FORMAT_VERSION,
    RUN_FORMAT_VERSION,
)

VariantStatus = Literal["ok", "skipped"]
"""ok: the variant was evaluated; skipped: it could not be (its error says why)."""


class RunFileModel(BaseModel):
    """Base of every run-file model: unknown keys are refused, so the schema is the whole file.

    A model that carries an evaluator's result subclasses its type (`evaluators.results`) and
    adds only the run's own fields, in a base of its own listed after the result type's: the
    keys of a base listed later come first in the file, and the config of the last base holds
    (run files stay mutable while a run writes them).
    """

    model_config = ConfigDict(extra="forbid", frozen=False)

    older_format_versions: ClassVar[tuple[int, ...]] = ()
    """Earlier `format_version`s a reader still accepts. Each is the current format without
    the keys added since (they all have defaults), so such a file is read as the current version."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """A run-file model is mutable, so not hashable, whatever frozen result type it subclasses."""
        super().__pydantic_init_subclass__(**kwargs)
        setattr(cls, "__hash__", None)  # noqa: B010 (a plain assignment is refused by type checkers)

    @classmethod
    def extending(cls, result: BaseModel, **fields: Any) -> Self:
        """This model of an evaluator's `result`, whose type it subclasses, with the run's own `fields`.

        Raises:
            TypeError: The model does not subclass the result's type, or `fields` names one of its fields.
        """
        kind = type(result)
        if not issubclass(cls, kind):
            raise TypeError(f"{cls.__name__} does not subclass {kind.__name__}")
        if repeated := sorted(fields.keys() & kind.model_fields.keys()):
            raise TypeError(f"{', '.join(repeated)}: a field of {kind.__name__}, given again")
        return cls.model_validate({**dict(result), **fields})


class CaseRecord(RunFileModel):
    """One line of records.jsonl: one case as one variant answered it, scored.

    A later line for the same variant and case replaces an earlier one.
    """

    older_format_versions: ClassVar[tuple[int, ...]] = (1, 2, 3)
    format_version: Literal[4] = RECORDS_FORMAT_VERSION
    variant: str
    case_id: str
    tags: list[str] = Field(default_factory=list)
    raw: str | None = Field(default=None, description="The model's own text of the last attempt.")
    record: dict[str, Any] | None = Field(default=None, description="The pipeline's normalized record.")
    valid: bool = Field(default=False, description="The pipeline produced a schema-valid record.")
    format_valid: bool | None = Field(
        default=None, description="The model's own text parsed as JSON and matched the schema, strictly."
    )
    attempts: int = 0
    retries: int | None = Field(
        default=None,
        description="Model calls repeated after retryable errors, over all attempts (None: a record of "
        "format 1, which did not count them).",
    )
    validation_errors: list[str] = Field(default_factory=list)
    error: str | None = None
    error_kind: str | None = Field(default=None, description="Why the case failed; None when it did not.")
    truncated: bool = False
    input_tokens_dropped: int | None = None
    field_accuracy: float | None = Field(default=None, description="Mean field score against the gold.")
    fields: dict[str, float] = Field(default_factory=dict, description="Score in [0, 1] per field.")
    outcomes: dict[str, str] = Field(default_factory=dict, description="How each field was scored.")
    agreement: float | None = Field(
        default=None, description="Mean field agreement with the reference's record."
    )
    agreement_fields: dict[str, float] | None = None
    ttft_s: float | None = None
    total_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    prompt_tokens_per_s: float | None = None
    generation_tokens_per_s: float | None = None
    attempt_timings: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each model call: its timings, token counts, text and, where the backend says, how its "
        "answer was obtained (`obtained`; `reported.verified_tokens` of `reported.answer_tokens`).",
    )
    obtained: Obtained | None = Field(
        default=None,
        description="How the case's answers were obtained: decoded; verified (every call was the reference's "
        "answer, each token confirmed as the variant's own choice, no decoding); verified_then_decoded (read "
        "as far as it agreed, decoded from there). None: the backend does not say, or an older record.",
    )
    cached_from: str | None = Field(
        default=None,
        description="The run that evaluated this case, when this record is a copy from the reference "
        "cache (its output and timings are that run's; its scores today's).",
    )

    @property
    def counts_as_format_valid(self) -> bool:
        """Strict format validity, falling back to the pipeline's validity where not recorded."""
        return bool(self.format_valid if self.format_valid is not None else self.valid)


class FidelityLine(RunFileModel):
    """One line of fidelity.jsonl: token fidelity of one variant on one case.

    `positions`, `kld`, `top1`, `delta_p` and `kinds` are None when the case could not be measured
    (`error`); `delta_p` and `kinds` are also None in lines written before they were measured.
    """

    format_version: Literal[1] = RUN_FORMAT_VERSION
    variant: str
    base: str | None = Field(
        default=None,
        description="The variant this one is compared with: None for the run's reference; else the base of "
        "the variant's runtime pair (the same model file on the embedded backend, "
        "`quantgate.evaluate.token_fidelity._pair_fidelity`), and `kld`/`top1` are against it.",
    )
    case_id: str
    positions: int | None = None
    kld: list[float] | None = Field(
        default=None, description="KL(reference || variant) per position (against `base` when given), nats."
    )
    top1: list[bool] | None = Field(default=None, description="Top-1 agreement per position.")
    delta_p: list[float] | None = Field(
        default=None,
        description="Per position, p_variant - p_reference of the reference's top token (an upper "
        "bound for Ollama where the variant's top-k misses that token).",
    )
    kinds: list[TokenKind | None] | None = Field(
        default=None,
        description="Per position, the kind of the answer's token there: structural (JSON punctuation, keys, "
        "quotes), value, or null outside the JSON (`evaluators.json_tokens`).",
    )
    requests: int | None = Field(default=None, description="A server's variant: requests the walk took.")
    unobserved: int | None = Field(
        default=None, description="A server's variant: positions the model never reached."
    )
    error: str | None = None


class NoiseFloorLine(RunFileModel):
    """One line of noise_floor.jsonl: one case of the noise-floor sample, as the reference answered it
    the first time (its record in records.jsonl, or the reference cache's) and again, one case at a
    time (`evaluators.noise_floor`). The rerun never enters records.jsonl."""

    format_version: Literal[1] = NOISE_FLOOR_FORMAT_VERSION
    variant: str = Field(description="The reference.")
    case_id: str
    first_record: dict[str, Any] | None = Field(
        default=None, description="The first answer's normalized record (None: no valid record)."
    )
    first_from: str | None = Field(
        default=None,
        description="The run whose answer `first_record` is, when it came from the reference cache "
        "(None: this run's).",
    )
    rerun_record: dict[str, Any] | None = Field(
        default=None, description="The rerun's normalized record (None: no valid record)."
    )
    rerun_raw: str | None = Field(default=None, description="The rerun's own text of its last attempt.")
    rerun_error: str | None = None
    identical: bool = Field(description="The same outcome both times (the same record, or neither valid).")
    agreement: float | None = Field(
        default=None,
        description="Mean field agreement of the rerun with the first record (None: it had none).",
    )
    fields_changed: float | None = Field(
        default=None, description="Share of fields whose agreement is below 1 (None: no first record)."
    )


class _LoadLineVariant(RunFileModel):
    """The keys of a load.jsonl line before the request's own."""

    older_format_versions: ClassVar[tuple[int, ...]] = (1,)
    format_version: Literal[2] = LOAD_FORMAT_VERSION
    variant: str


class LoadLine(LoadRequest, _LoadLineVariant):
    """One line of load.jsonl: one load-test request (`evaluators.loadtest.LoadRequest`) to a variant."""
