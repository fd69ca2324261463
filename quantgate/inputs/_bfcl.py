"""BFCL's own files as a quantgate tool-calling dataset: a category's questions file and its
possible answers (JSON lines, as `bfcl-eval` ships them in `bfcl_eval/data/`), for `quantgate
datasets import bfcl` and scripts/make_tool_calls_dataset.py.

Each question becomes a case with its own `tools` (its functions, BFCL's parameter types in JSON
Schema's words, a `.` in a name as `_`, as BFCL does for OpenAI's models), BFCL's id, the tags
`category:NAME` (from the id) and `lang:en`, and its gold calls in BFCL's form
(`{"name", "acceptable"}`, docs/tasks.md). A category without answers (irrelevance) has the gold
"no call". The task asks for several calls (`"calls": "many"`) when an answer has several or the
category is a parallel one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluators.errors import UsageError
from evaluators.format import loads_json
from evaluators.tasks import ToolCallingTask, check_expected
from quantgate.inputs._problems import Problem
from quantgate.inputs._utf8 import utf8_lines

__all__ = [
    "BfclDataset",
    "bfcl_card",
    "bfcl_case_category",
    "convert_bfcl",
    "json_schema",
    "tool_name",
    "tool_of",
    "write_bfcl_dataset",
]

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}
"""BFCL's parameter types that JSON Schema names otherwise (`any` has no type)."""

_ID_NUMBER = re.compile(r"_\d+(-\d+)*$")
"""The end of a BFCL id after its category: `_12` (`simple_python_12`), `_885-184-2` (live)."""


def json_schema(node: Any) -> Any:
    """A BFCL parameter schema in JSON Schema's words (types renamed, BFCL's `optional` dropped)."""
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            if value != "any":
                converted["type"] = _TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            converted["properties"] = {name: json_schema(child) for name, child in value.items()}
        elif key == "items":
            converted["items"] = json_schema(value)
        elif key != "optional":
            converted[key] = value
    return converted


def tool_name(name: str) -> str:
    """A BFCL function's name as a tool's: `.` (`spotify.play`) as `_`, which OpenAI's names refuse."""
    return name.replace(".", "_")


def tool_of(function: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL function in the OpenAI tool format; its parameters refuse an argument they do not
    declare (`additionalProperties: false`, as BFCL's checker does)."""
    parameters = {**json_schema(function["parameters"]), "additionalProperties": False}
    described = {"name": tool_name(function["name"]), "description": function.get("description", "")}
    return {"type": "function", "function": {**described, "parameters": parameters}}


def bfcl_case_category(case_id: str) -> str:
    """A BFCL case's category, from its id: `parallel_multiple` of `parallel_multiple_12`."""
    return _ID_NUMBER.sub("", case_id)


@dataclass(frozen=True, kw_only=True)
class BfclDataset:
    """A converted BFCL file: the task (task.json's value), its cases (cases.jsonl's lines) and
    the questions left out, by id: why (`NOT_ONE_MESSAGE`, `NO_FUNCTIONS`, `UNANSWERABLE`)."""

    task: dict[str, Any]
    cases: list[dict[str, Any]]
    skipped: dict[str, str]
    examples: list[dict[str, Any]] = field(default_factory=list)

    def with_examples(self, count: int) -> BfclDataset:
        """The first `count` cases (file order) made the few-shot examples (examples.jsonl), not scored.

        Raises:
            UsageError: Fewer than `count` + 1 cases (at least one must stay to score).
        """
        if count and count >= len(self.cases):
            raise UsageError(f"--examples {count}: only {len(self.cases)} cases; at least one must be scored")
        return replace(self, examples=self.cases[:count], cases=self.cases[count:])

    @property
    def categories(self) -> dict[str, int]:
        """Cases per BFCL category."""
        counts: dict[str, int] = {}
        for case in self.cases:
            category = bfcl_case_category(case["id"])
            counts[category] = counts.get(category, 0) + 1
        return counts


def _read(file: Path) -> list[tuple[str, dict[str, Any]]]:
    """(`FILE:LINE`, the object) of each line with an `id`; a line that is not one is an error."""
    problems: list[Problem] = []
    rows = []
    for lineno, line in utf8_lines(file, problems):
        where = f"{file}:{lineno}"
        try:
            row = loads_json(line)
        except (json.JSONDecodeError, ValueError) as exc:
            raise UsageError(f"{where}: not a JSON object: {exc}") from None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise UsageError(f'{where}: not a BFCL entry (a JSON object with a string "id")')
        rows.append((where, row))
    if problems:
        raise UsageError(f"{file}:{problems[0].line}: {problems[0].message}")
    if not rows:
        raise UsageError(f"{file}: no entries")
    return rows


def _text(question: Mapping[str, Any], where: str) -> str | None:
    """The question's text when it is one user message; None when it is not (several turns, a
    system prompt: a quantgate case is one text)."""
    turns = question.get("question")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise UsageError(f'{where}: "question" must be a list of turns, each a list of messages')
    if len(turns) != 1 or len(turns[0]) != 1 or not isinstance(turns[0][0], dict):
        return None
    message = turns[0][0]
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str) or not content.strip():
        return None
    return content.strip()


def _gold_call(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict) or len(entry) != 1:
        raise UsageError(f"{where}: a ground-truth call must be one object {{name: {{argument: [values]}}}}")
    ((name, acceptable),) = entry.items()
    if not isinstance(acceptable, dict):
        raise UsageError(
            f"{where}: the arguments of {name!r} must be an object of lists of acceptable values"
        )
    return {"name": tool_name(str(name)), "acceptable": acceptable}


def _answers(file: Path, ids: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Each question's gold calls by its id; an id that is no question's is an error."""
    answers: dict[str, list[dict[str, Any]]] = {}
    for where, row in _read(file):
        if row["id"] not in ids:
            raise UsageError(
                f"{where}: answer {row['id']!r} has no question in the questions file (another category's?)"
            )
        truth = row.get("ground_truth")
        if not isinstance(truth, list):
            raise UsageError(f'{where}: "ground_truth" must be a list of calls')
        answers[row["id"]] = [_gold_call(entry, where) for entry in truth]
    return answers


NOT_ONE_MESSAGE = "not one user message (several turns or a system prompt; a quantgate case is one text)"
NO_FUNCTIONS = "no functions (a case offers at least one tool)"
UNANSWERABLE = (
    "no call passes BFCL's checker (an argument without acceptable values, or one the answer needs "
    "that the function does not declare)"
)


def _unanswerable(functions: Sequence[Mapping[str, Any]], calls: Sequence[dict[str, Any]]) -> bool:
    """No call can pass BFCL's checker: an argument's list of acceptable values is empty, or the
    answer needs an argument (its list lacks `""`) that the function does not declare."""
    declared = {
        tool_name(str(f.get("name"))): (f.get("parameters") or {}).get("properties") or {} for f in functions
    }
    for call in calls:
        properties = declared.get(call["name"])  # None: not offered, which the gold check names
        for name, values in call["acceptable"].items():
            if not isinstance(values, list):
                continue  # the gold check names it
            if not values or ("" not in values and properties is not None and name not in properties):
                return True
    return False


def _case(
    question: Mapping[str, Any], where: str, calls: Sequence[dict[str, Any]] | None, many: bool
) -> dict[str, Any] | str:
    """The question as a case, or why it is left out."""
    text = _text(question, where)
    if text is None:
        return NOT_ONE_MESSAGE
    functions = question.get("function")
    if not isinstance(functions, list) or not all(
        isinstance(f, dict) and "parameters" in f for f in functions
    ):
        raise UsageError(f'{where}: "function" must be a list of functions with "name" and "parameters"')
    if not functions:
        return NO_FUNCTIONS
    if _unanswerable(functions, calls or []):
        return UNANSWERABLE
    tools = [tool_of(f) for f in functions]
    gold = list(calls or [])
    expected: dict[str, Any] = {"calls": gold} if many else {"call": gold[0] if gold else None}
    try:
        task = ToolCallingTask.model_validate({"tools": tools, "calls": "many" if many else "one"})
    except ValidationError as exc:
        error = exc.errors()[0]
        raise UsageError(f"{where}: its functions: {error['msg']}") from None
    problems = check_expected(task, expected)
    if problems:
        raise UsageError(f"{where}: its answer: {problems[0]}")
    category = bfcl_case_category(question["id"])
    return {
        "id": question["id"],
        "text": text,
        "tools": tools,
        "expected": expected,
        "tags": [f"category:{category}", "lang:en"],
    }


def convert_bfcl(questions: Path, answers: Path | None) -> BfclDataset:
    """The dataset of a BFCL questions file and its answers file (None: a category without
    answers, whose gold is "no call"; see the module docstring). A question that is not one user
    message (several turns, a system prompt), has no functions, or that no call can answer by
    BFCL's checker is left out, in `skipped` with why.

    Raises:
        UsageError: A file is not BFCL's, naming its line: a malformed line, a question without an
            answer, an answer without a question, no answers file for a category other than
            irrelevance.
    """
    rows = _read(questions)
    ids: dict[str, str] = {}
    for where, row in rows:
        if row["id"] in ids:
            raise UsageError(f"{where}: id {row['id']!r} is already at {ids[row['id']]}")
        ids[row["id"]] = where
    truth = _answers(answers, ids) if answers is not None else {}
    if answers is None:
        relevant = next(((w, r) for w, r in rows if "irrelevance" not in bfcl_case_category(r["id"])), None)
        if relevant is not None:
            where, row = relevant
            raise UsageError(
                f"{where}: {row['id']!r} needs its answers file: `-` is for the irrelevance categories, "
                "whose gold is no call (a relevance question's gold is some call, which a gold cannot say)"
            )
    if answers is not None:
        missing = next((where for where, row in rows if row["id"] not in truth), None)
        if missing is not None:
            raise UsageError(f"{missing}: the question has no answer in {answers}")
    many = any(len(calls) != 1 for calls in truth.values()) or any(
        bfcl_case_category(row["id"]).startswith("parallel") for _, row in rows
    )
    converted = [(row["id"], _case(row, where, truth.get(row["id"]), many)) for where, row in rows]
    task = {"kind": "tool_calling", "tools": [], "calls": "many" if many else "one"}
    cases = [case for _, case in converted if not isinstance(case, str)]
    skipped = {id_: why for id_, why in converted if isinstance(why, str)}
    if not cases:
        raise UsageError(
            f"{questions}: none of its {len(rows)} questions can be a case: {next(iter(skipped.values()))}"
        )
    return BfclDataset(task=task, cases=cases, skipped=skipped)


_ATTRIBUTION = (
    "Shishir G. Patil, Huanzhi Mao, Fanjia Yan, Charlie Cheng-Jie Ji, Vishnu Suresh, Ion Stoica and\n"
    '  Joseph E. Gonzalez, "The Berkeley Function Calling Leaderboard (BFCL): From Tool Use to Agentic\n'
    "  Evaluation of Large Language Models\", ICML 2025; and the data card's citation: Fanjia Yan,\n"
    "  Huanzhi Mao, Charlie Cheng-Jie Ji, Tianjun Zhang, Shishir G. Patil, Ion Stoica and Joseph E.\n"
    '  Gonzalez (2024), "Berkeley Function Calling Leaderboard",\n'
    "  https://gorilla.cs.berkeley.edu/blogs/8_berkeley_function_calling_leaderboard.html."
)


def _bfcl_eval_version(file: Path) -> str:
    """`bfcl-eval X` when the file is in the installed bfcl-eval's data, else where it was read."""
    from importlib import metadata, util

    spec = util.find_spec("bfcl_eval")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    if any(file.resolve().is_relative_to(Path(root).resolve()) for root in roots):
        return f"bfcl-eval {metadata.version('bfcl-eval')} (PyPI), its `bfcl_eval/data/`"
    return f"files read from `{file.parent}` (not the installed bfcl-eval's; say which release on sharing)"


def bfcl_card(dataset: BfclDataset, questions: Path, answers: Path | None) -> str:
    """The dataset's README.md: what it is, its source, license and attribution, how it was made."""
    files = f"`{questions.name}`" + (
        f" and `possible_answer/{answers.name}`" if answers else " (no answers file)"
    )
    counts = ", ".join(f"{name} {n}" for name, n in sorted(dataset.categories.items()))
    shape = (
        '`{"calls": [...]}`, several calls'
        if dataset.task["calls"] == "many"
        else '`{"call": ...}`, one call'
    )
    return f"""# {questions.stem}

**Tool calling** (`task.json`: `"kind": "tool_calling"`, records {shape}): BFCL's questions, each
with its own tools (the case's `tools`) and its gold calls in BFCL's form, each argument's acceptable
values (docs/tasks.md). {len(dataset.cases)} cases: {counts}.

- **Source:** the Berkeley Function Calling Leaderboard (BFCL), {_bfcl_eval_version(questions)}:
  {files}. The gorilla repository: https://github.com/ShishirPatil/gorilla,
  `berkeley-function-call-leaderboard/bfcl_eval/data/`.
- **License:** Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0), the license of
  bfcl-eval and of the BFCL data; this derived dataset is shared under the same license. The files
  here are modified from BFCL's (see How it was made).
- **Attribution:** {_ATTRIBUTION}

## How it was made

`quantgate datasets import bfcl` converted the files: BFCL's parameter types in JSON Schema's words
(`dict` object, `float` number, `tuple` array, `any` no type), each function's parameters closed
(`additionalProperties: false`), a `.` in a function's name as `_`; ids are BFCL's, tags
`category:NAME` (from the id) and `lang:en`; the gold calls keep every acceptable value (`""`: the
argument may be left out).{_examples(dataset)}{_skipped(dataset)}
"""


def _examples(dataset: BfclDataset) -> str:
    if not dataset.examples:
        return ""
    ids = ", ".join(f"`{case['id']}`" for case in dataset.examples)
    return (
        f" The first {len(dataset.examples)} questions in BFCL's order are the few-shot examples "
        f"(`examples.jsonl`, never scored): {ids}."
    )


def _skipped(dataset: BfclDataset) -> str:
    reasons: dict[str, list[str]] = {}
    for id_, why in dataset.skipped.items():
        reasons.setdefault(why, []).append(id_)
    return "".join(
        f"\n\n{len(ids)} questions are left out, {why}: "
        + ", ".join(f"`{id_}`" for id_ in ids[:5])
        + (", ..." if len(ids) > 5 else ".")
        for why, ids in reasons.items()
    )


def write_bfcl_dataset(dataset: BfclDataset, out: Path, card: str) -> None:
    """Write task.json, cases.jsonl, examples.jsonl (when it has examples) and README.md into `out`
    (made if missing).

    Raises:
        UsageError: `out` already holds a dataset file.
    """
    written = ("task.json", "cases.jsonl", "examples.jsonl", "README.md")
    existing = [name for name in written if (out / name).exists()]
    if existing:
        raise UsageError(f"{out}: already has {', '.join(existing)}; choose an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / "task.json").write_text(
        json.dumps(dataset.task, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    lines = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in dataset.cases)
    (out / "cases.jsonl").write_text(lines, encoding="utf-8")
    if dataset.examples:
        examples = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in dataset.examples)
        (out / "examples.jsonl").write_text(examples, encoding="utf-8")
    (out / "README.md").write_text(card, encoding="utf-8")
