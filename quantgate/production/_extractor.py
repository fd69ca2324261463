"""Using the chosen variant in production: the decision's variant, the evaluated graph, your schema.

    chosen = load_chosen("runs/<run-id>")            # decision.json -> the variant, checked
    with open_extractor(chosen, schema=Invoice) as extractor:
        invoice = extractor.extract(text)            # an Invoice
        output = extractor.graph.invoke({"text": text}, context=extractor.context)

`load_chosen` reads the run's decision and resolves its recommended variant to the spec
the run evaluated (backend, model file, options), refusing with an error that names the
file when there is nothing to use: no decision, no recommendation, a missing model file or
one whose sha256 differs from the file evaluated. `open_extractor` opens that variant with
its backend, constrained to your schema, and builds the extraction graph's context the way
`quantgate run` built it (prompt from the schema, few-shot examples, the variant's context
window and tokenizer, the run's `max_repairs`). The graph is `graphs.extraction.graph`, the
very object the evaluation ran.

The decision's evidence holds for the task it was evaluated on: the closer your schema and
examples are to the evaluated dataset's, the more it applies. Evaluate on a dataset in your
own schema (`quantgate run --dataset DIR`) before relying on a variant for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ValidationError

from evaluators.errors import QuantgateError
from evaluators.format import FormatEvaluator
from evaluators.schema import field_names
from evaluators.tasks import ExtractionTask, Task, field_spec
from graphs.extraction import DEFAULT_MAX_REPAIRS, ExtractionContext, ExtractionResult
from graphs.extraction import graph as extraction_graph
from quantgate.backends import capabilities, open_variant
from quantgate.backends._extraction_context import variant_context
from quantgate.inputs._dataset import Case, Dataset, DatasetError, load_dataset
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._record_schema import RecordType, record_schema
from quantgate.inputs._variants import Variant, VariantSpec
from quantgate.production._guard import OnlineGuard
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import DATASET_DIR, DECISION_JSON
from quantgate.rundir._store import RunFileError, read_decision

RecordT = TypeVar("RecordT")
ModelT = TypeVar("ModelT", bound=BaseModel)
Example = tuple[str, Mapping[str, Any] | BaseModel]
"""A few-shot example: a text and its record (a dict, or an instance of your model)."""


class ProductionError(QuantgateError, RuntimeError):
    """A run whose decision cannot be put in production; the message names the file and why."""


class ExtractionFailedError(QuantgateError, RuntimeError):
    """No valid record for a text; `result` holds everything the graph returned."""

    def __init__(self, message: str, result: ExtractionResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True, kw_only=True)
class ChosenVariant:
    """The variant a run's decision recommends, resolved to what the run evaluated.

    Attributes:
        run_dir: The run directory.
        variant: The variant spec (backend, model file or tag, options, sha256).
        decision: The whole decision, as in decision.json (rollback signals included).
        max_repairs: The repairs the evaluation allowed per case.
    """

    run_dir: Path
    variant: Variant
    decision: Decision
    max_repairs: int

    @property
    def is_reference(self) -> bool:
        """Whether the decision kept the reference (no quantized variant was shown safe)."""
        return self.decision.recommended_is_reference

    @property
    def dataset_dir(self) -> Path:
        """The run's copy of the cases it evaluated (schema and few-shot examples included)."""
        return self.run_dir / DATASET_DIR


def _read_decision(run_dir: Path) -> Decision:
    path = run_dir / DECISION_JSON
    if not path.is_file():
        raise ProductionError(f"{path}: not found; decide first: quantgate decide {run_dir}")
    try:
        return read_decision(run_dir)
    except (OSError, RunFileError) as exc:
        raise ProductionError(f"unreadable decision: {exc}") from None


def _variant_spec(decision: Decision, path: Path, chat_model: BaseChatModel | None) -> Variant:
    name = decision.recommended
    if name is None:
        raise ProductionError(
            f"{path}: recommends no variant (none passed every gate; see decision.md beside it), "
            "so there is nothing to put in production"
        )
    entry = decision.record.variants.get(name)
    if entry is None:
        raise ProductionError(f"{path}: the record has no spec for the recommended variant {name!r}")
    fields = entry.model_dump(include=set(VariantSpec.model_fields))
    try:
        variant = Variant.model_validate(fields)
    except ValidationError as exc:
        raise ProductionError(f"{path}: variant {name!r} cannot be rebuilt from the record: {exc}") from None
    if capabilities(variant).from_python:
        if chat_model is None:
            raise ProductionError(
                f"{path}: variant {name!r} was a LangChain chat model given from Python; "
                "pass the same model as load_chosen(..., chat_model=...)"
            )
        variant = variant.model_copy(update={"chat_model": chat_model})
    return variant


def _check_model_file(variant: Variant, path: Path, *, verify_sha256: bool) -> None:
    """An embedded variant's file must be there, and be the file the run evaluated."""
    if not capabilities(variant).model_file:
        return
    model = Path(variant.model)
    if not model.is_file():
        raise ProductionError(f"{path}: variant {variant.name!r}: its model file {model} is missing")
    if verify_sha256 and variant.sha256:
        actual = file_sha256(model)
        if actual != variant.sha256:
            raise ProductionError(
                f"{path}: variant {variant.name!r}: {model} has sha256 {actual}, "
                f"but the run evaluated a file with sha256 {variant.sha256}"
            )


def load_chosen(
    run_dir: str | Path,
    *,
    verify_sha256: bool = True,
    chat_model: BaseChatModel | None = None,
    allow_incomplete: bool = False,
) -> ChosenVariant:
    """The variant a run's decision recommends, checked against what the run evaluated.

    Args:
        run_dir: A run directory with decision.json (`quantgate run` writes it).
        verify_sha256: Hash an embedded variant's model file and compare it with the run's.
        chat_model: For a variant evaluated as a LangChain chat model object, that object.
        allow_incomplete: Take the decision even when it was made on an incomplete run
            (`quantgate decide --allow-incomplete`).

    Raises:
        ProductionError: No decision, a decision on an incomplete run, no recommended variant,
            a missing model file or one with another sha256; the message names the file.
    """
    directory = Path(run_dir)
    decision = _read_decision(directory)
    path = directory / DECISION_JSON
    if decision.run_complete is False and not allow_incomplete:
        problems = "; ".join(decision.run_problems[:2]) or "see decision.md"
        raise ProductionError(
            f"{path}: decided on an incomplete run ({problems}); finish it (quantgate run --resume "
            f"{directory}) and decide again, or pass allow_incomplete=True to deploy on what it held"
        )
    variant = _variant_spec(decision, path, chat_model)
    _check_model_file(variant, path, verify_sha256=verify_sha256)
    options = decision.record.options
    return ChosenVariant(
        run_dir=directory,
        variant=variant,
        decision=decision,
        max_repairs=DEFAULT_MAX_REPAIRS if options is None else options.max_repairs,
    )


@dataclass(frozen=True, kw_only=True)
class Extractor(Generic[RecordT]):
    """The chosen variant, opened for one schema, with the evaluated graph and its context.

    Attributes:
        chosen: The chosen variant.
        context: The extraction graph's context (the variant's chat model is in it).
        examples_from: Where the few-shot examples came from: `given` (yours), `run` (the
            evaluated dataset's), or `none` (zero-shot).
        guard: An online guard fed by every `run`/`extract` call, if any.
    """

    chosen: ChosenVariant
    context: ExtractionContext
    examples_from: Literal["given", "run", "none"]
    to_record: Callable[[dict[str, Any]], RecordT]
    guard: OnlineGuard | None = None

    @property
    def graph(self) -> Any:
        """The compiled extraction graph: `graphs.extraction.graph`, the one evaluated."""
        return extraction_graph

    def run(self, text: str, *, reference_record: Mapping[str, Any] | None = None) -> ExtractionResult:
        """Run the graph on one text; everything it returned, typed.

        Args:
            text: The input text.
            reference_record: A shadow reference's record for the same text, for the
                guard's agreement signals.
        """
        output = self.graph.invoke({"text": text}, context=self.context)
        if self.guard is not None:
            self.guard.observe_extraction(output, context=self.context, reference_record=reference_record)
        return ExtractionResult.from_output(output)

    def extract(self, text: str) -> RecordT:
        """The record of one text: an instance of your model, or a dict for a JSON Schema.

        Raises:
            ExtractionFailedError: The model gave no valid record after the repairs, or a
                backend error ended the call.
        """
        result = self.run(text)
        if result.error or not result.valid or result.record is None:
            reason = result.error or "; ".join(result.validation_errors) or "no record"
            raise ExtractionFailedError(f"no valid record: {reason}", result)
        try:
            return self.to_record(result.record)
        except ValidationError as exc:
            raise ExtractionFailedError(
                f"the record does not validate into the model: {exc}", result
            ) from exc


def _evaluated_dataset(chosen: ChosenVariant) -> Dataset | None:
    try:
        return load_dataset(chosen.dataset_dir, skip_invalid_cases=True)
    except (DatasetError, FileNotFoundError):
        return None


def _examples(
    given: Sequence[Example] | None, evaluated: Dataset | None, schema: Mapping[str, Any]
) -> tuple[list[tuple[str, dict[str, Any]]], Literal["given", "run", "none"]]:
    """Your examples; else the evaluated dataset's when they fit your schema; else none.

    The run's examples fit when the two schemas have the same fields and every example
    record is valid against yours.
    """
    if given is not None:
        shots = [
            (text, r.model_dump(mode="json") if isinstance(r, BaseModel) else dict(r)) for text, r in given
        ]
        return shots, "given" if shots else "none"
    fields = {leaf.name for leaf in evaluated.spec.leaves()} if evaluated is not None else set()
    if evaluated is None or (schema != evaluated.schema and fields != set(field_names(schema))):
        return [], "none"
    validator = FormatEvaluator(schema=schema)
    shots = [(e.text, e.expected) for e in evaluated.examples if e.expected is not None]
    if all(not validator.schema_errors(record) for _, record in shots):
        return shots, "run" if shots else "none"
    return [], "none"


def _dataset_view(
    chosen: ChosenVariant, schema: dict[str, Any], examples: Sequence[tuple[str, dict[str, Any]]], task: Task
) -> Dataset:
    """Your schema and examples as a dataset, so `variant_context` builds the context (the
    run's task, whose prompt the variant was judged on, when the schema is the run's)."""
    return Dataset(
        name=f"{chosen.run_dir.name}-production",
        path=chosen.dataset_dir,
        schema=schema,
        spec=field_spec(task, schema),
        task=task,
        cases=(),
        examples=tuple(
            Case(id=f"example-{i}", text=text, expected=record) for i, (text, record) in enumerate(examples)
        ),
        card=None,
        sha256="",
    )


@contextmanager
def _open(
    source: str | Path | ChosenVariant,
    schema: RecordType | None,
    examples: Sequence[Example] | None,
    guard: OnlineGuard | None,
) -> Iterator[Extractor[Any]]:
    chosen = source if isinstance(source, ChosenVariant) else load_chosen(source)
    evaluated = _evaluated_dataset(chosen)
    if schema is not None:
        json_schema = record_schema(schema)
    elif evaluated is not None:
        json_schema = dict(evaluated.schema)
    else:
        raise ProductionError(f"{chosen.dataset_dir}: the run's copy of its cases is missing; pass schema=")
    shots, source_of_examples = _examples(examples, evaluated, json_schema)
    to_record: Callable[[dict[str, Any]], Any] = dict
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        to_record = schema.model_validate
    with open_variant(chosen.variant, json_schema) as opened:
        task = evaluated.task if schema is None and evaluated is not None else ExtractionTask()
        view = _dataset_view(chosen, json_schema, shots, task)
        context = variant_context(view, opened, max_repairs=chosen.max_repairs)
        yield Extractor(
            chosen=chosen,
            context=context,
            examples_from=source_of_examples,
            to_record=to_record,
            guard=guard,
        )


@overload
def open_extractor(
    source: str | Path | ChosenVariant,
    *,
    schema: type[ModelT],
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[Extractor[ModelT]]: ...


@overload
def open_extractor(
    source: str | Path | ChosenVariant,
    *,
    schema: Mapping[str, Any] | None = None,
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[Extractor[dict[str, Any]]]: ...


def open_extractor(
    source: str | Path | ChosenVariant,
    *,
    schema: RecordType | None = None,
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[Extractor[Any]]:
    """Open the chosen variant for your schema; the model is freed when the block ends.

    Args:
        source: A run directory, or a `ChosenVariant` from `load_chosen`.
        schema: Your record: a pydantic model class (records come back as instances) or a
            JSON Schema (records come back as dicts). Default: the evaluated dataset's schema.
        examples: Few-shot (text, record) pairs; `[]` for zero-shot. Default: the evaluated
            dataset's examples when they fit your schema (same fields, every record valid
            against it), else zero-shot; `Extractor.examples_from` says which.
        guard: An online guard to feed with every call made through the extractor.

    Raises:
        ProductionError: See `load_chosen`; or no schema given and the run's cases are gone.
        SchemaSupportError: The schema uses a construct quantgate cannot handle.
        BackendError: The backend could not open the variant.
    """
    return _open(source, schema, examples, guard)
