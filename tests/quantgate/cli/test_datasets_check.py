"""`quantgate datasets check` and `list` on datasets of every task kind: the kind printed, each
problem named by file, line and field."""

from quantgate.cli._main import main
from tests.fakes import case, write_classification_dataset, write_dataset

TOOL_TASK = {
    "kind": "tool_calling",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        },
        {"type": "function", "function": {"name": "now"}},
    ],
}


def test_check_prints_each_datasets_kind(tmp_path, capsys):
    labels = write_classification_dataset(tmp_path / "labels", ["card_lost", "top_up_failed"])
    calls = write_dataset(
        tmp_path / "calls",
        [
            {
                "id": "a",
                "text": "Oslo?",
                "expected": {"call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
            },
            {"id": "b", "text": "hi", "expected": {"call": None}},
        ],
        schema=None,
        task=TOOL_TASK,
    )
    texts = write_dataset(
        tmp_path / "texts",
        [{"id": "a", "text": "name[A]", "expected": {"text": "A."}}],
        schema=None,
        task={"kind": "generation"},
    )
    fields = write_dataset(tmp_path / "fields", [case(0)])
    assert main(["datasets", "check", str(labels), str(calls), str(texts), str(fields)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"ok   {labels}: classification, 3 labels; 2 cases (2 labeled), 1 examples",
        f"ok   {calls}: tool_calling, 2 tools; 2 cases (2 labeled), 0 examples",
        f"ok   {texts}: generation; 1 cases (1 labeled), 0 examples",
        f"ok   {fields}: extraction; 1 cases (1 labeled), 0 examples",
    ]


def test_check_names_a_label_outside_the_set(tmp_path, capsys):
    bad = write_classification_dataset(tmp_path / "bad", ["card_lost", "card_lost", "refund"])
    assert main(["datasets", "check", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == f"FAIL {bad}: 1 error(s)\n"
    assert (
        err
        == f"error: {bad}/cases.jsonl:3: expected.label: 'refund' is not one of the 3 labels in task.json\n"
    )
