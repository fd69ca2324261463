"""The chosen variant for the task kinds other than extraction, with typed answers.

    with open_classifier("runs/<run-id>") as classify:
        answer = classify("my card has not arrived")     # Classification(label="card_arrival", ...)
    with open_tool_caller("runs/<run-id>") as call_tool:
        answer = call_tool("weather in Paris?")          # ToolCallAnswer(call=ToolCall(...), calls=...)
        answer = call_tool("weather in Paris?", tools=[...])  # this call's own tools (OpenAI format)
    with open_generator("runs/<run-id>") as generate:
        answer = generate("name[Aromi], food[Italian]")  # Generation(text="Aromi serves ...", ...)

Each opener is `open_extractor` on the run's own task (the graph, prompt, derived record schema,
few-shot examples and repairs the run evaluated) with the record read into a frozen answer. An
answer never raises for a bad output: `valid` is False, the typed value None, and `result` holds
everything the graph returned. A run of another kind is refused before the model is loaded,
naming the opener that fits it. The online guard counts these calls as it counts extractions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from evaluators.errors import UsageError
from evaluators.kinds import kind_of
from evaluators.task_models import Task, Tool, tool_set_key
from graphs.extraction import Attempt, ExtractionResult
from quantgate.inputs._problems import Problem
from quantgate.inputs._task_file import read_task
from quantgate.production._call_tools import call_tools
from quantgate.production._extractor import (
    ChosenVariant,
    Example,
    Extractor,
    ProductionError,
    load_chosen,
    open_extractor,
)
from quantgate.production._guard import OnlineGuard

AnswerT = TypeVar("AnswerT")
RunnerT = TypeVar("RunnerT", bound="TaskRunner[Any]")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What every typed answer has: whether the model gave a valid record, and the graph's result.

    Attributes:
        valid: The model gave a valid record (after the run's repairs) and no backend error.
        result: Everything the extraction graph returned (raw text, attempts, errors).
    """

    valid: bool
    result: ExtractionResult

    @property
    def record(self) -> dict[str, Any] | None:
        """The record as the graph returned it (`{"label": ...}`, `{"call": ...}`, ...); pass a
        shadow reference's as `reference_record` to feed the guard's agreement signals."""
        return self.result.record if self.valid else None

    @property
    def raw(self) -> str | None:
        """The model's last text."""
        return self.result.raw

    @property
    def attempts(self) -> list[Attempt]:
        """Each model call, repairs included."""
        return self.result.attempts

    @property
    def error(self) -> str | None:
        """Why there is no valid record: a backend error or the validation errors; None if valid."""
        if self.valid:
            return None
        return self.result.error or "; ".join(self.result.validation_errors) or "no record"


@dataclass(frozen=True, kw_only=True)
class Classification(Answer):
    """A classification's answer.

    Attributes:
        label: The label (a single-label task); None for a multi-label task or no valid answer.
        labels: The labels that apply, in the model's order (a multi-label task; may be empty);
            None for a single-label task or no valid answer.
    """

    label: str | None = None
    labels: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A call of one of the run's tools, with its arguments as the model gave them (a left-out
    argument is absent; the run's scorer took it as its default)."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolCallAnswer(Answer):
    """A tool-calling answer.

    Attributes:
        call: The call of a one-call run; None when the model chose no call (or gave no valid
            answer: see `valid`), and for a run of several calls (`calls`).
        calls: Every call, in the model's order: those of a run of several calls (task.json
            `"calls": "many"`), or the one call of a one-call run; empty when the model chose no
            call or gave no valid answer.
    """

    call: ToolCall | None = None
    calls: tuple[ToolCall, ...] = ()

    @property
    def abstained(self) -> bool:
        """The model validly chose no call: no tool fits the text."""
        return self.valid and self.call is None and not self.calls


@dataclass(frozen=True, kw_only=True)
class Generation(Answer):
    """A generation's answer.

    Attributes:
        text: The generated text; None when there is no valid answer.
    """

    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class TaskRunner(Generic[AnswerT]):
    """The chosen variant opened on its run's task; call it on a text for a typed answer.

    Attributes:
        extractor: The underlying extractor (its `context`, `graph` and `guard`).
        task: The run's task.
    """

    extractor: Extractor[dict[str, Any]]
    task: Task
    to_answer: Callable[[ExtractionResult, bool], AnswerT]

    def __call__(self, text: str, *, reference_record: Mapping[str, Any] | None = None) -> AnswerT:
        """The answer for one text (never raises for an invalid output: see `valid`).

        Args:
            text: The input text.
            reference_record: A shadow reference's record for the same text (its answer's
                `record`), for the guard's agreement signals.
        """
        return self._answer(self.extractor, text, reference_record)

    def _answer(
        self, extractor: Extractor[dict[str, Any]], text: str, reference: Mapping[str, Any] | None
    ) -> AnswerT:
        result = extractor.run(text, reference_record=reference)
        valid = result.valid and result.error is None and result.record is not None
        return self.to_answer(result, valid)


Classifier = TaskRunner[Classification]
Generator = TaskRunner[Generation]


@dataclass(frozen=True, kw_only=True)
class ToolCaller(TaskRunner[ToolCallAnswer]):
    """The chosen variant of a tool-calling run; call it on a text, with the call's own tools or
    the run's. A call's tools get their own record schema, prompt and model constrained to that
    schema (the grammar compiled once), shared by every call with the same tools (by tool-set hash,
    as the run's cases with their own tools share them)."""

    _by_tools: dict[str, Extractor[dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __call__(
        self,
        text: str,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reference_record: Mapping[str, Any] | None = None,
    ) -> ToolCallAnswer:
        """The answer for one text (never raises for an invalid output: see `valid`).

        Args:
            text: The input text.
            tools: The tools the model may call for this text, in the OpenAI function format (a
                request's `tools`: `[{"type": "function", "function": {"name", "description",
                "parameters"}}]`); they replace the run's. None: the run's tools (task.json's).
            reference_record: A shadow reference's record for the same text, for the guard.

        Raises:
            UsageError: `tools` are not valid tools (the message names the place, `tools[1].function.name`),
                or none are given and the run's task.json offers none (its cases brought their own).
        """
        if tools is None:
            if self.task.needs_case_tools:
                raise UsageError(
                    "tools: the run's task.json offers no tools (each of its cases brought its own); "
                    "pass the tools the model may call: call_tool(text, tools=[...])"
                )
            return self._answer(self.extractor, text, reference_record)
        return self._answer(self._extractor_for(call_tools(tools)), text, reference_record)

    def _extractor_for(self, tools: tuple[Tool, ...]) -> Extractor[dict[str, Any]]:
        """The extractor of a tool set: the run's, prompting and constraining to these tools."""
        key = tool_set_key(tools)
        if key not in self._by_tools:
            task = self.task.model_copy(update={"tools": tools})
            context = self.extractor.context.for_task(task)
            self._by_tools.setdefault(key, replace(self.extractor, context=context))
        return self._by_tools[key]


def _classification(task: Task) -> Callable[[ExtractionResult, bool], Classification]:
    labels = task.label_set
    if labels is None:
        raise TypeError(f"a task with a closed label set is needed, not {task.kind}")
    field, multi_label = labels.field, labels.multi_label

    def answer(result: ExtractionResult, valid: bool) -> Classification:
        value = result.record.get(field) if valid and result.record is not None else None
        if multi_label:
            labels = tuple(value) if isinstance(value, list) else None
            return Classification(valid=valid, result=result, labels=labels)
        return Classification(valid=valid, result=result, label=value if isinstance(value, str) else None)

    return answer


def _typed_call(call: Mapping[str, Any]) -> ToolCall:
    return ToolCall(name=call["name"], arguments=dict(call.get("arguments") or {}))


def _tool_call(result: ExtractionResult, valid: bool) -> ToolCallAnswer:
    """The answer of a one-call record (`{"call": ...}`: `call`, and `calls` of it) or of a record of
    several calls (`{"calls": [...]}`: `calls` only)."""
    record = result.record if valid and result.record is not None else {}
    if "calls" in record:
        calls = record["calls"] if isinstance(record["calls"], list) else []
        typed = tuple(_typed_call(call) for call in calls if isinstance(call, Mapping))
        return ToolCallAnswer(valid=valid, result=result, calls=typed)
    call = record.get("call")
    one = _typed_call(call) if isinstance(call, Mapping) else None
    return ToolCallAnswer(valid=valid, result=result, call=one, calls=() if one is None else (one,))


def _generation(result: ExtractionResult, valid: bool) -> Generation:
    text = result.record.get("text") if valid and result.record is not None else None
    return Generation(valid=valid, result=result, text=text if isinstance(text, str) else None)


def _run_task(chosen: ChosenVariant, opener: str) -> Task:
    """The run's task, refused with the opener that fits it (its kind's `opener`) when that is not
    `opener`."""
    problems: list[Problem] = []
    task = read_task(chosen.dataset_dir, problems) if chosen.dataset_dir.is_dir() else None
    if task is None:
        why = "; ".join(str(p) for p in problems[:2]) or "the run's copy of its cases is missing"
        raise ProductionError(f"{chosen.dataset_dir}: cannot tell the run's task ({why})")
    fits = kind_of(task).opener
    if fits != opener:
        article = "an" if task.kind[0] in "aeiou" else "a"
        raise ProductionError(
            f"{chosen.run_dir}: run {chosen.run_dir.name} is {article} {task.kind} run; "
            f"use {fits}, not {opener}"
        )
    return task


@contextmanager
def _open_runner(
    source: str | Path | ChosenVariant,
    opener: str,
    runner: Callable[..., RunnerT],
    answers: Callable[[Task], Callable[[ExtractionResult, bool], Any]],
    examples: Sequence[Example] | None,
    guard: OnlineGuard | None,
) -> Iterator[RunnerT]:
    chosen = source if isinstance(source, ChosenVariant) else load_chosen(source)
    task = _run_task(chosen, opener)  # before the model is loaded
    with open_extractor(chosen, examples=examples, guard=guard) as extractor:
        yield runner(extractor=extractor, task=task, to_answer=answers(task))


def open_classifier(
    source: str | Path | ChosenVariant,
    *,
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[Classifier]:
    """Open the chosen variant of a classification run: a text in, a `Classification` out.

    Args:
        source: A run directory, or a `ChosenVariant` from `load_chosen`.
        examples: Few-shot (text, record) pairs, records as `{"label": ...}`; `[]` for
            zero-shot. Default: the run's examples.
        guard: An online guard to feed with every call.

    Raises:
        ProductionError: See `load_chosen`; or the run is of another task kind (the message
            names the opener that fits it) or its copy of the cases is gone.
        BackendError: The backend could not open the variant.
    """
    return _open_runner(source, "open_classifier", Classifier, _classification, examples, guard)


def open_tool_caller(
    source: str | Path | ChosenVariant,
    *,
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[ToolCaller]:
    """Open the chosen variant of a tool-calling run: a text (and its own tools, or the run's) in, a
    `ToolCallAnswer` out (`ToolCaller`).

    Args:
        source: A run directory, or a `ChosenVariant` from `load_chosen`.
        examples: Few-shot (text, record) pairs, records as `{"call": {"name": ...,
            "arguments": {...}}}` or `{"call": None}` (`{"calls": [...]}` for a run of several
            calls); `[]` for zero-shot. Default: the run's.
        guard: An online guard to feed with every call.

    Raises:
        ProductionError: As `open_classifier`.
        BackendError: The backend could not open the variant.
    """
    return _open_runner(source, "open_tool_caller", ToolCaller, lambda task: _tool_call, examples, guard)


def open_generator(
    source: str | Path | ChosenVariant,
    *,
    examples: Sequence[Example] | None = None,
    guard: OnlineGuard | None = None,
) -> AbstractContextManager[Generator]:
    """Open the chosen variant of a generation run: a text in, a `Generation` out.

    Args:
        source: A run directory, or a `ChosenVariant` from `load_chosen`.
        examples: Few-shot (text, record) pairs, records as `{"text": ...}`; `[]` for
            zero-shot. Default: the run's examples.
        guard: An online guard to feed with every call.

    Raises:
        ProductionError: As `open_classifier`.
        BackendError: The backend could not open the variant.
    """
    return _open_runner(source, "open_generator", Generator, lambda task: _generation, examples, guard)
