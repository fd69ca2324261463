"""What the embedding evaluation embeds: a corpus of documents and, optionally, labeled queries.

Two sources, both by directory or bundled name:

- a **retrieval dataset**: `corpus.jsonl` (one document per line: `id`, `text`, `lang`,
  `tags`) and `queries.jsonl` (one query per line: `id`, `text`, `lang`, `tags`, and
  `relevant`, the ids of the documents judged relevant). The format is documented in
  datasets/README.md;
- an **extraction dataset** (`cases.jsonl`): its case texts are the documents, with the
  case's id, language and tags. There are no labeled queries; each document is a query
  for its own neighbours.

Problems are reported like the extraction dataset's (`Problem`, file and line), and a
corpus with errors is refused with all of them listed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluators import loads_json
from evaluators.errors import MissingInputError
from quantgate.inputs._dataset import (
    CASES_FILE,
    DatasetError,
    Problem,
    Text,
    load_dataset,
    resolve_dataset,
    validation_problems,
)
from quantgate.inputs._problems import is_repeat
from quantgate.inputs._utf8 import utf8_lines

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"


class Document(BaseModel):
    """One line of `corpus.jsonl` (or an extraction case's text)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: Text
    lang: str | None = None
    tags: tuple[str, ...] = ()


class Query(Document):
    """One line of `queries.jsonl`: a text and the ids of the documents judged relevant to it."""

    relevant: tuple[str, ...] = Field(min_length=1)


@dataclass(frozen=True, kw_only=True)
class Corpus:
    """Documents to embed and index, and the labeled queries to search them with (maybe none).

    Attributes:
        name: The directory's name.
        source: `"retrieval"` (corpus.jsonl + queries.jsonl) or `"cases"` (an extraction
            dataset's case texts).
        documents: The documents, in file order.
        queries: Labeled queries; empty for a corpus of case texts.
        sha256: Hash of the files read, identifying this exact corpus.
    """

    name: str
    source: Literal["retrieval", "cases"]
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]
    sha256: str

    def limited(self, limit: int | None) -> Corpus:
        """The first `limit` documents, and the queries whose relevant documents are all among them."""
        if limit is None or limit >= len(self.documents):
            return self
        documents = self.documents[:limit]
        kept = {d.id for d in documents}
        queries = tuple(q for q in self.queries if set(q.relevant) <= kept)
        return Corpus(
            name=self.name, source=self.source, documents=documents, queries=queries, sha256=self.sha256
        )


_Line = TypeVar("_Line", bound=Document)


def _read(file: Path, model: type[_Line], problems: list[Problem]) -> Iterator[_Line]:
    """The valid lines of a JSONL file; every bad line becomes a problem naming its line."""
    seen: dict[str, str] = {}
    for lineno, line in utf8_lines(file, problems):
        try:
            item = model.model_validate(loads_json(line))
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(file=file.name, line=lineno, message=f"invalid JSON: {exc.msg} (column {exc.colno})")
            )
            continue
        except ValidationError as exc:
            problems.extend(validation_problems(exc, file=file.name, line=lineno))
            continue
        if is_repeat(seen, item.id, file=file.name, line=lineno, where=f"line {lineno}", problems=problems):
            continue
        yield item


def _digest(root: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


def _retrieval_corpus(root: Path) -> Corpus:
    problems: list[Problem] = []
    documents = tuple(_read(root / CORPUS_FILE, Document, problems))
    queries: tuple[Query, ...] = ()
    if (root / QUERIES_FILE).is_file():
        queries = tuple(_read(root / QUERIES_FILE, Query, problems))
    known = {d.id for d in documents}
    for query in queries:
        for doc_id in sorted(set(query.relevant) - known):
            problems.append(
                Problem(
                    file=QUERIES_FILE,
                    field="relevant",
                    message=f"query {query.id!r}: no document {doc_id!r} in {CORPUS_FILE}",
                )
            )
    if not documents:
        problems.append(Problem(file=CORPUS_FILE, message="no usable documents"))
    if any(p.severity == "error" for p in problems):
        raise DatasetError(root, problems)
    files = tuple(n for n in (CORPUS_FILE, QUERIES_FILE) if (root / n).is_file())
    return Corpus(
        name=root.resolve().name,
        source="retrieval",
        documents=documents,
        queries=queries,
        sha256=_digest(root, files),
    )


def load_corpus(name_or_path: str | Path) -> Corpus:
    """A retrieval dataset, or an extraction dataset's case texts, by directory or bundled name.

    Raises:
        MissingInputError: Neither a directory nor a bundled name, or a directory with
            neither `corpus.jsonl` nor `cases.jsonl`.
        DatasetError: The files have errors; all of them are listed.
    """
    root = resolve_dataset(name_or_path)
    if (root / CORPUS_FILE).is_file():
        return _retrieval_corpus(root)
    if not (root / CASES_FILE).is_file():
        raise MissingInputError(
            f"{root}: no {CORPUS_FILE} (a retrieval dataset) and no {CASES_FILE} (an extraction dataset)"
        )
    dataset = load_dataset(root)
    documents = tuple(Document(id=c.id, text=c.text, lang=c.lang, tags=c.tags) for c in dataset.cases)
    return Corpus(name=dataset.name, source="cases", documents=documents, queries=(), sha256=dataset.sha256)
