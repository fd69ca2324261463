"""Corpora for the embedding evaluation: retrieval datasets, extraction datasets' case texts, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.inputs._corpus import load_corpus
from quantgate.inputs._dataset import DatasetError


def _write(path: Path, name: str, lines: list[object]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


def test_the_bundled_retrieval_set_loads_with_its_labels() -> None:
    corpus = load_corpus("retrieval-es-en")
    assert corpus.source == "retrieval"
    assert len(corpus.documents) == 60
    assert len(corpus.queries) == 30
    assert {d.lang for d in corpus.documents} == {"es", "en"}
    ids = {d.id for d in corpus.documents}
    assert all(set(q.relevant) <= ids for q in corpus.queries)
    assert sum("cross-language" in q.tags for q in corpus.queries) == 4


def test_an_extraction_dataset_gives_its_case_texts() -> None:
    corpus = load_corpus("contacts-events")
    assert corpus.source == "cases"
    assert corpus.queries == ()
    first = corpus.documents[0]
    assert first.text.strip()
    assert first.lang in ("en", "es", "fr", "de", "pt", "it")


def test_limited_keeps_only_queries_it_can_answer(tmp_path: Path) -> None:
    root = tmp_path / "set"
    _write(root, "corpus.jsonl", [{"id": f"d{i}", "text": f"text {i}"} for i in range(4)])
    _write(
        root,
        "queries.jsonl",
        [{"id": "q1", "text": "a", "relevant": ["d0"]}, {"id": "q2", "text": "b", "relevant": ["d1", "d3"]}],
    )
    limited = load_corpus(root).limited(2)
    assert [d.id for d in limited.documents] == ["d0", "d1"]
    assert [q.id for q in limited.queries] == ["q1"]
    assert load_corpus(root).limited(None).documents == load_corpus(root).documents


def test_every_bad_line_is_named(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    _write(
        root,
        "corpus.jsonl",
        [{"id": "d1", "text": "ok"}, "{not json", {"id": "d1", "text": "again"}, {"id": "d2", "text": " "}],
    )
    _write(
        root,
        "queries.jsonl",
        [{"id": "q1", "text": "a", "relevant": ["d9"]}, {"id": "q2", "text": "b", "relevant": []}],
    )
    with pytest.raises(DatasetError) as caught:
        load_corpus(root)
    message = str(caught.value)
    assert "corpus.jsonl:2: invalid JSON" in message
    assert "corpus.jsonl:3: id: duplicate id 'd1' (first at line 1)" in message
    assert "corpus.jsonl:4: text: empty text" in message
    assert "queries.jsonl: relevant: query 'q1': no document 'd9' in corpus.jsonl" in message
    assert "queries.jsonl:2: relevant:" in message


def test_a_line_that_is_not_utf8_is_named_and_a_line_separator_is_text(tmp_path: Path) -> None:
    """A bad byte names its own line (issue 46; the whole file was refused without a line), and a
    raw U+2028 inside a JSON string is text, not the end of a line."""
    root = tmp_path / "set"
    root.mkdir()
    lines = [{"id": "d1", "text": "one\u2028two"}, {"id": "d2", "text": "x"}]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (root / "corpus.jsonl").write_bytes(text.encode())
    assert [d.text for d in load_corpus(root).documents] == ["one\u2028two", "x"]
    with (root / "corpus.jsonl").open("ab") as handle:
        handle.write(b'{"id": "d3", "text": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:3: not UTF-8: invalid start byte at byte 23"):
        load_corpus(root)


def test_a_directory_with_neither_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no corpus\.jsonl .* and no cases\.jsonl"):
        load_corpus(tmp_path)
