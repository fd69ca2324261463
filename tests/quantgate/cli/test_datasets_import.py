"""`quantgate datasets import bfcl`: BFCL's questions and possible answers as a dataset with
per-case tools and BFCL's gold; bad input named by file and line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluators.tasks import ToolCallingTask, check_expected
from quantgate.cli._main import main

PLAY = {
    "name": "spotify.play",
    "description": "Play an artist.",
    "parameters": {
        "type": "dict",
        "properties": {
            "artist": {"type": "string", "description": "who"},
            "duration": {"type": "integer", "description": "minutes"},
            "volume": {"type": "float", "description": "0 to 1", "optional": True},
        },
        "required": ["artist", "duration"],
    },
}
QUESTIONS = [
    {"id": f"parallel_{i}", "question": [[{"role": "user", "content": text}]], "function": [PLAY]}
    for i, text in enumerate(
        ["Play Taylor Swift 20 min and Maroon 5 15.", "Play Queen for 5 minutes, twice."]
    )
]
ANSWERS = [
    {"id": "parallel_0", "ground_truth": [
        {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20], "volume": [0.5, ""]}},
        {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}},
    ]},
    {"id": "parallel_1", "ground_truth": [
        {"spotify.play": {"artist": ["Queen"], "duration": [5]}},
        {"spotify.play": {"artist": ["Queen"], "duration": [5]}},
    ]},
]  # fmt: skip


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _files(tmp_path: Path, questions: list[Any] = QUESTIONS, answers: list[Any] = ANSWERS) -> tuple[str, str]:
    return (
        str(_jsonl(tmp_path / "BFCL_v4_parallel.json", questions)),
        str(_jsonl(tmp_path / "answers.json", answers)),
    )


def test_a_parallel_category_becomes_a_dataset_of_several_calls(tmp_path, capsys):
    questions, answers = _files(tmp_path)
    assert main(["datasets", "import", "bfcl", questions, answers, str(tmp_path / "out")]) == 0
    assert "wrote" in capsys.readouterr().out
    task = json.loads((tmp_path / "out" / "task.json").read_text())
    assert task == {"kind": "tool_calling", "tools": [], "calls": "many"}
    cases = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == ["parallel_0", "parallel_1"]
    assert cases[0]["text"] == "Play Taylor Swift 20 min and Maroon 5 15."
    assert cases[0]["tags"] == ["category:parallel", "lang:en"]
    (tool,) = cases[0]["tools"]
    assert tool["function"]["name"] == "spotify_play"  # OpenAI's names have no "."
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "artist": {"type": "string", "description": "who"},
            "duration": {"type": "integer", "description": "minutes"},
            "volume": {"type": "number", "description": "0 to 1"},
        },
        "required": ["artist", "duration"],
        "additionalProperties": False,
    }
    first = {"artist": ["Taylor Swift"], "duration": [20], "volume": [0.5, ""]}
    assert cases[0]["expected"] == {"calls": [
        {"name": "spotify_play", "acceptable": first},
        {"name": "spotify_play", "acceptable": {"artist": ["Maroon 5"], "duration": [15]}},
    ]}  # fmt: skip
    for case in cases:  # each gold passes the gold check against the case's own tools
        case_task = ToolCallingTask.model_validate({"tools": case["tools"], "calls": task["calls"]})
        assert check_expected(case_task, case["expected"]) == []
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Apache License 2.0" in card
    assert "`BFCL_v4_parallel.json` and `possible_answer/answers.json`" in card
    assert "Patil" in card


def test_an_irrelevance_category_without_answers_has_the_gold_no_call(tmp_path):
    questions = [{**q, "id": f"irrelevance_{i}"} for i, q in enumerate(QUESTIONS)]
    path = _jsonl(tmp_path / "BFCL_v4_irrelevance.json", questions)
    assert main(["datasets", "import", "bfcl", str(path), "-", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "task.json").read_text())["calls"] == "one"
    cases = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    assert [(c["expected"], c["tags"]) for c in cases] == [
        ({"call": None}, ["category:irrelevance", "lang:en"])
    ] * 2


def test_only_an_irrelevance_category_goes_without_answers(tmp_path, capsys):
    questions, _ = _files(tmp_path)
    assert main(["datasets", "import", "bfcl", questions, "-", str(tmp_path / "out")]) == 2
    assert f"{questions}:1: 'parallel_0' needs its answers file" in capsys.readouterr().err


def test_unanswerable_questions_are_left_out_and_named(tmp_path, capsys):
    no_functions = {**QUESTIONS[0], "id": "irrelevance_0", "function": []}
    path = _jsonl(
        tmp_path / "BFCL_v4_irrelevance.json", [no_functions, {**QUESTIONS[1], "id": "irrelevance_1"}]
    )
    assert main(["datasets", "import", "bfcl", str(path), "-", str(tmp_path / "irr")]) == 0
    assert "left out irrelevance_0: no functions" in capsys.readouterr().err
    empty = {"id": "parallel_1", "ground_truth": [{"spotify.play": {"artist": [], "duration": [5]}}]}
    undeclared = {
        "id": "parallel_0",
        "ground_truth": [{"spotify.play": {"artist": ["A"], "duration": [1], "x": [1]}}],
    }
    third = {**QUESTIONS[0], "id": "parallel_2"}
    golds = [undeclared, empty, {**ANSWERS[0], "id": "parallel_2"}]
    questions, answers = _files(tmp_path, [*QUESTIONS, third], golds)
    assert main(["datasets", "import", "bfcl", questions, answers, str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "left out parallel_0: no call passes BFCL's checker" in err
    assert "left out parallel_1: no call passes BFCL's checker" in err
    lines = (tmp_path / "out" / "cases.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["parallel_2"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "2 questions are left out, no call passes BFCL's checker" in card
    questions, answers = _files(tmp_path, QUESTIONS, golds[:2])  # nothing left: an error
    assert main(["datasets", "import", "bfcl", questions, answers, str(tmp_path / "none")]) == 2
    assert f"{questions}: none of its 2 questions can be a case" in capsys.readouterr().err


def test_a_question_of_several_messages_is_left_out_and_named(tmp_path, capsys):
    turns = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Play Queen."}]]
    questions, answers = _files(tmp_path, [QUESTIONS[0], {**QUESTIONS[1], "question": turns}])
    assert main(["datasets", "import", "bfcl", questions, answers, str(tmp_path / "out")]) == 0
    assert "left out parallel_1: not one user message" in capsys.readouterr().err
    assert len((tmp_path / "out" / "cases.jsonl").read_text().splitlines()) == 1


def _bad(tmp_path: Path) -> dict[str, tuple[list[Any], list[Any], str]]:
    questions = str(tmp_path / "BFCL_v4_parallel.json")
    answers = str(tmp_path / "answers.json")
    return {
        "malformed": ([QUESTIONS[0], "{"], ANSWERS[:1], f"{questions}:2: not a BFCL entry"),
        "no answer": (QUESTIONS, ANSWERS[:1], f"{questions}:2: the question has no answer in {answers}"),
        "ids differ": (QUESTIONS[:1], ANSWERS, f"{answers}:2: answer 'parallel_1' has no question"),
        "unknown tool": (
            QUESTIONS[:1],
            [{"id": "parallel_0", "ground_truth": [{"spotify.stop": {}}]}],
            f"{questions}:1: its answer: expected.calls[0].name: 'spotify_stop' is not one of the 1 tools",
        ),
        "not a list": (
            QUESTIONS[:1],
            [{"id": "parallel_0", "ground_truth": {"spotify.play": {}}}],
            f'{answers}:1: "ground_truth" must be a list of calls',
        ),
    }


@pytest.mark.parametrize("bad", ["malformed", "no answer", "ids differ", "unknown tool", "not a list"])
def test_bad_input_is_named_by_file_and_line_with_exit_2(tmp_path, capsys, bad):
    questions, answers, message = _bad(tmp_path)[bad]
    _files(tmp_path, questions, answers)
    if bad == "malformed":  # a line that is not JSON
        lines = (tmp_path / "BFCL_v4_parallel.json").read_text().splitlines()
        (tmp_path / "BFCL_v4_parallel.json").write_text(lines[0] + "\n{\n", encoding="utf-8")
        message = message.replace("not a BFCL entry", "not a JSON object")
    files = [str(tmp_path / name) for name in ("BFCL_v4_parallel.json", "answers.json", "out")]
    assert main(["datasets", "import", "bfcl", *files]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_existing_dataset_is_not_overwritten(tmp_path, capsys):
    questions, answers = _files(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "cases.jsonl").write_text("mine\n")
    assert main(["datasets", "import", "bfcl", questions, answers, str(tmp_path / "out")]) == 2
    assert "already has cases.jsonl" in capsys.readouterr().err
    assert (tmp_path / "out" / "cases.jsonl").read_text() == "mine\n"
    assert main(["datasets", "import", "bfcl", str(tmp_path / "nowhere.json"), "-", str(tmp_path / "x")]) == 2


def test_the_first_questions_can_be_the_few_shot_examples(tmp_path, capsys):
    from quantgate.inputs._dataset import load_dataset

    questions, answers = _files(tmp_path)
    out = tmp_path / "out"
    assert main(["datasets", "import", "bfcl", "--examples", "1", questions, answers, str(out)]) == 0
    assert "1 cases (parallel 1), 1 examples" in capsys.readouterr().out
    dataset = load_dataset(out)
    assert [e.id for e in dataset.examples] == ["parallel_0"]
    assert [c.id for c in dataset.cases] == ["parallel_1"]
    assert (
        "The first 1 questions in BFCL's order are the few-shot examples" in (out / "README.md").read_text()
    )
    again = ["datasets", "import", "bfcl", "--examples", "2", questions, answers, str(tmp_path / "all")]
    assert main(again) == 2
    assert "--examples 2: only 2 cases; at least one must be scored" in capsys.readouterr().err
