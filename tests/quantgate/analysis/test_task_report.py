"""The report and the run view of a run of each task kind: its figures per variant (from
summary.json, shown as text), a classification run's recall per class and labels against the
reference's, and the failing cases in the kind's terms (labels, calls, texts with chrF)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from sacrebleu.metrics.chrf import CHRF

from quantgate.analysis._report import write_report
from quantgate.analysis._run_view import load_run_view
from quantgate.analysis._task_view import task_failures, task_figures
from tests.quantgate.analysis import kind_runs
from tests.quantgate.browser import CHROMIUM, assert_renders_in_chromium
from tests.quantgate.production.task_runs import multi_label_run


class Tables(HTMLParser):
    """The cells' text of each table of a page, in order, each with the table's class."""

    def __init__(self) -> None:
        super().__init__()
        self.ordered: list[tuple[str, list[list[str]]]] = []
        self._current: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._current = []
            self.ordered.append((dict(attrs).get("class") or "", self._current))
        elif tag == "tr" and self._current is not None:
            self._current.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._current:
            self._current[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._current = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def ordered_tables(page: Path) -> list[tuple[str, list[list[str]]]]:
    """A page's tables in order, each with its class."""
    parser = Tables()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.ordered


def tables(page: Path) -> dict[str, list[list[str]]]:
    """A page's tables by class (the first of each class)."""
    found: dict[str, list[list[str]]] = {}
    for kind, rows in ordered_tables(page):
        found.setdefault(kind, rows)
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    return {
        "classification": kind_runs.classification_run(root / "c"),
        "tool_calling": kind_runs.tool_calling_run(root / "t"),
        "generation": kind_runs.generation_run(root / "g"),
    }


def test_a_classification_report_has_accuracy_macro_f1_recall_and_labels_against_the_reference(runs):
    found = tables(write_report(runs["classification"]))
    # quant: c1 and c4 (gold card_arrival) taken for card_lost and top_up_failed: 4/6 right; F1 of
    # card_arrival 0, card_lost 2*3/(2*3+1) = 6/7, top_up_failed 2*1/(2*1+1) = 2/3: macro 32/63 = 0.508;
    # its worst recall card_arrival's 0/2; the fake models give no label probabilities: —
    assert found["task-figures"] == [
        ["variant", "accuracy", "macro-F1", "worst recall (label)", "no answer", "ECE", "Brier", "P(gold)",
         "Δ P(gold)", "Δ ref unsure", "Δ ref sure"],
        ["ref *", "100.0%", "1.000", "100.0% (card_arrival)", "0", "—", "—", "—", "—", "—", "—"],
        ["quant", "66.7%", "0.508", "0.0% (card_arrival)", "0", "—", "—", "—", "—", "—", "—"],
    ]  # fmt: skip
    assert found["class-recall"] == [
        ["class", "support", "ref", "quant"],
        ["card_arrival", "2", "100.0%", "0.0%"],
        ["card_lost", "3", "100.0%", "100.0%"],
        ["top_up_failed", "1", "100.0%", "100.0%"],
    ]
    assert found["confusion"] == [
        ["ref ↓ / quant →", "card_arrival", "card_lost", "top_up_failed", "no answer"],
        ["card_arrival", "0", "1", "1", "0"],
        ["card_lost", "0", "3", "0", "0"],
        ["top_up_failed", "0", "0", "1", "0"],
        ["no answer", "0", "0", "0", "0"],
    ]


def test_a_classification_runs_failures_are_gold_reference_and_candidate_labels(runs):
    failures = task_failures(load_run_view(runs["classification"]))
    shown = failures[["variant", "case_id", "gold", "reference", "candidate", "score", "reference_right"]]
    assert shown.values.tolist() == [
        ["quant", "c1", "card_arrival", "card_arrival", "card_lost", 0.0, True],
        ["quant", "c4", "card_arrival", "card_arrival", "top_up_failed", 0.0, True],
    ]


def test_a_generation_report_has_chrf_against_gold_and_reference_and_length_ratios(runs):
    gold = list(kind_runs.TEXTS.values())
    quant = [gold[0], kind_runs.QUANT_TEXTS["name[B]"]]
    chrf = CHRF().corpus_score(quant, [gold]).score  # quant's texts against gold = the reference's
    ratio = (1 + len(quant[1]) / len(gold[1])) / 2
    found = tables(write_report(runs["generation"]))
    assert found["task-figures"] == [
        ["variant", "chrF vs gold", "chrF vs reference", "length ratio vs gold", "length ratio vs reference",
         "empty texts"],
        ["ref *", "100.0", "—", "1.00", "—", "0.0%"],  # the reference is not measured against itself
        ["quant", f"{chrf:.1f}", f"{chrf:.1f}", f"{ratio:.2f}", f"{ratio:.2f}", "0.0%"],
    ]  # fmt: skip
    assert f"{ratio:.2f}" == "0.90"  # 23 of 29 characters: the figure differs from the reference's


def test_a_generation_reports_failure_browser_scores_the_text_by_chrf(runs):
    page = write_report(runs["generation"])
    sentence = CHRF().sentence_score(kind_runs.QUANT_TEXTS["name[B]"], [kind_runs.TEXTS["name[B]"]]).score
    (entry,) = [rows for _, rows in ordered_tables(page) if rows[0][0] == "field"]  # g1 of quant
    header, row = entry
    assert header == ["field", "gold", "reference (ref)", "quant", "chrF", "outcome"]
    gold = kind_runs.TEXTS["name[B]"]
    assert row == ["text", gold, gold, kind_runs.QUANT_TEXTS["name[B]"], f"{sentence / 100:.2f}", "partial"]


def test_a_generation_runs_failures_are_texts_with_their_chrf(runs):
    failures = task_failures(load_run_view(runs["generation"]))
    assert failures[["case_id", "gold", "candidate"]].values.tolist() == [
        ["g1", kind_runs.TEXTS["name[B]"], kind_runs.QUANT_TEXTS["name[B]"]]
    ]
    sentence = CHRF().sentence_score(kind_runs.QUANT_TEXTS["name[B]"], [kind_runs.TEXTS["name[B]"]]).score
    assert failures.loc[0, "score"] == pytest.approx(sentence / 100)


def test_a_tool_calling_runs_failures_are_expected_and_candidate_calls(runs):
    failures = task_failures(load_run_view(runs["tool_calling"]))
    assert failures[["case_id", "gold", "reference", "candidate", "reference_right"]].values.tolist() == [
        ["t0", 'get_weather(city="Paris")', 'get_weather(city="Paris")', 'get_weather(city="Bergen")', True],
        ["t3", "no call", "no call", 'get_weather(city="Oslo")', True],
    ]


def test_figures_not_measured_are_missing_not_zero(runs):
    figures = task_figures(load_run_view(runs["generation"]))
    assert figures["chrf_reference"].isna().tolist() == [True, False]
    assert figures.loc["quant", "empty_text_share"] == 0.0  # measured: no empty text


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_classification_report_renders_in_headless_chromium(runs, tmp_path):
    assert_renders_in_chromium(write_report(runs["classification"]), tmp_path)


def test_a_multi_label_report_has_subset_accuracy_micro_f1_and_hamming_loss(tmp_path):
    found = tables(write_report(multi_label_run(tmp_path)))
    # both variants give both cases' gold label sets: every share 1, Hamming loss 0
    assert found["task-figures"] == [
        ["variant", "subset accuracy", "micro-F1", "macro-F1", "Hamming loss", "no answer"],
        ["ref *", "100.0%", "1.000", "1.000", "0.000", "0"],
        ["quant", "100.0%", "1.000", "1.000", "0.000", "0"],
    ]
    assert "confusion" not in found  # labels against the reference's: single-label runs only


def test_a_tool_calling_report_has_selection_arguments_exact_call_abstention_and_validity(runs):
    # quant, by hand over t0..t3: the right tool in t0, t1, t2 and a call in t3 where none is due
    # (selection 3/4); arguments right where the tool is: city in t0 wrong, t1's two and t2's two
    # right (4/5); exact calls t1 and t2 (2/4); t3, the one case no tool fits, not abstained (0/1);
    # no call case left without a call (false abstention 0/3); every answer fits a tool's schema.
    found = tables(write_report(runs["tool_calling"]))
    assert found["task-figures"] == [
        ["variant", "tool selection", "arguments", "exact call", "abstention", "false abstention",
         "schema validity"],
        ["ref *", "100.0%", "100.0%", "100.0%", "100.0%", "0.0%", "100.0%"],
        ["quant", "75.0%", "80.0%", "50.0%", "0.0%", "0.0%", "100.0%"],
    ]  # fmt: skip
