import base64
import json
from html.parser import HTMLParser

import pytest

from quantgate.analysis._charts import draw_charts
from quantgate.analysis._report import REPORT_HTML, write_report
from quantgate.analysis._run_view import load_run_view
from quantgate.cli._main import main
from quantgate.decide._recommendation import load_decision
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import REPORT_DIR
from quantgate.rundir._store import load_run, read_records
from tests.fakes import GOOD, QueuedChatModel
from tests.quantgate.browser import CHARTS, CHROMIUM, assert_renders_in_chromium
from tests.quantgate.run_factory import (
    HOSTILE_GOLD,
    HOSTILE_OUTPUT,
    HOSTILE_RAW,
    HOSTILE_TEXT,
    make_fake_run,
    make_run,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Elements(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    return make_fake_run(tmp_path_factory.mktemp("fake"))


@pytest.fixture(scope="module")
def report(fake_run):
    return write_report(fake_run)


def test_report_is_written_beside_its_charts(fake_run, report):
    assert report == fake_run / REPORT_DIR / REPORT_HTML
    for name in CHARTS:
        data = (report.parent / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE), name
        from PIL import Image

        with Image.open(report.parent / name) as image:
            image.verify()


def test_hostile_case_text_gold_and_output_render_as_text(report):
    page = report.read_text(encoding="utf-8")
    for hostile in (HOSTILE_TEXT, HOSTILE_OUTPUT, HOSTILE_GOLD, HOSTILE_RAW):
        assert hostile not in page
        escaped = hostile.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert escaped in page, hostile
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    tags = elements(page)
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{}]  # the page's own inline filter script, and nothing else
    assert not [attrs for _, attrs in tags if any(name.startswith("on") for name in attrs)]
    images = [attrs for tag, attrs in tags if tag == "img"]
    assert len(images) == len(CHARTS)


def test_report_references_no_external_resource(report):
    page = report.read_text(encoding="utf-8")
    assert "http://" not in page
    assert "https://" not in page
    for tag, attrs in elements(page):
        assert tag not in ("link", "iframe", "object", "embed"), tag
        for name in ("src", "href", "srcset", "data", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith(("data:", "#")), (tag, name, value[:40])
    assert "url(" not in page  # no CSS-loaded resource either


def test_charts_are_embedded_as_data_uris_of_the_written_pngs(report):
    page = report.read_text(encoding="utf-8")
    sources = [attrs["src"] for tag, attrs in elements(page) if tag == "img"]
    embedded = {base64.b64decode(str(src).removeprefix("data:image/png;base64,")) for src in sources}
    assert embedded == {(report.parent / name).read_bytes() for name in CHARTS}


def test_report_has_the_summary_and_each_gates_verdict(fake_run, report):
    page = report.read_text(encoding="utf-8")
    decision = load_decision(fake_run)
    assert "Keep the reference, ref" in page
    for name, section in decision.variants.items():
        for gate in section.gates:
            row = f'<tr><td>{name}</td><td>{gate.gate}</td><td class="{gate.status}">{gate.status}</td>'
            assert row in page
    assert "<th>TTFT p50</th>" in page
    assert '<td class="num">—</td>' in page  # a fake model has no file: its size is not measured, not 0
    assert "&gt; 0 MiB" not in page


def test_failure_browser_has_every_failing_case_and_its_filters(report):
    page = report.read_text(encoding="utf-8")
    sections = [attrs for tag, attrs in elements(page) if tag == "section"]
    pairs = {(s["data-variant"], json.loads(str(s["data-fields"])) != []) for s in sections}
    assert len(sections) == 6  # ref: c0, c4; quant: c0, c1, c3, c4
    assert pairs == {("quant", True), ("ref", True)}
    regressions = [s for s in sections if s["data-regression"] == "yes"]
    assert len(regressions) == 2  # quant alone fails c1 and c3
    assert sections[0]["data-regression"] == "yes"  # listed first
    for control in ("filter-variant", "filter-field", "filter-slice", "filter-regressions"):
        assert f'id="{control}"' in page
    for tag in ("lang:es", "numbers", "dates", "long"):
        assert f'<option value="{tag}">' in page
    assert "invalid_output" in page


def test_report_of_a_run_not_decided_yet(tmp_path):
    run_dir = make_fake_run(tmp_path, decide=False)
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "Not decided yet" in page


def test_charts_draw_the_figures_of_the_records(tmp_path):
    r = [{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}]
    q = [{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}, {"a": 1.0, "b": 0.5}]
    tags = [("lang:en", "numbers"), ("lang:es",), ("lang:es", "dates")]
    footprints = {"R": 700.0, "Q": 400.0, "S": 500.0}
    run_dir = make_run(tmp_path / "run", {"R": r, "Q": q, "S": r}, footprints=footprints, tags=tags)
    charts = {c.key: c for c in draw_charts(load_run_view(run_dir), out=tmp_path / "charts")}
    heatmap = charts["field_deltas"].data
    records = list(read_records(run_dir))
    for name in ("Q", "S"):
        for field in ("a", "b"):
            mine = [x.fields[field] for x in records if x.variant == name]
            ref = [x.fields[field] for x in records if x.variant == "R"]
            expected = sum(m - f for m, f in zip(mine, ref, strict=True)) / 3
            assert heatmap.loc[field, name] == pytest.approx(expected)
    assert heatmap.loc["b", "Q"] == pytest.approx((-1 + 0 - 0.5) / 3)
    # Q (400 MiB, 41.7%) and S (500 MiB, 66.7%) are on the frontier; R (700 MiB, 66.7%) is beaten by S.
    frontier = charts["accuracy_memory"].data["on_frontier"]
    assert frontier.to_dict() == {"R": False, "Q": True, "S": True}
    assert "Frontier: Q, S." in charts["accuracy_memory"].note
    assert charts["slices"].data.loc["lang:es", "Q"] == pytest.approx((0 + 0 + 1 + 0.5) / 4)
    assert charts["latency"].data["ttft_s"].isna().all()  # not measured in hand-written records
    assert "Left out of time to first token (not measured): R, Q, S." in charts["latency"].note
    assert "Total time: on the 3 cases every variant ran." in charts["latency"].note
    for chart in charts.values():
        assert chart.path.read_bytes().startswith(PNG_SIGNATURE)


def test_cli_report_prints_the_page(fake_run, capsys):
    assert main(["report", str(fake_run)]) == 0
    assert capsys.readouterr().out.strip() == str(fake_run / REPORT_DIR / REPORT_HTML)


def test_cli_report_of_a_missing_run_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "summary.json" in capsys.readouterr().err


def _cli_run(tmp_path, monkeypatch, *extra):
    """`quantgate run` over the fake run's dataset and chat models."""
    source = make_fake_run(tmp_path / "source", decide=False)
    dataset = load_run(source).summary.dataset.path
    variants = _fake_variants()
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: variants)
    out = tmp_path / "runs"
    code = main(["run", "--dataset", dataset, "--variants", "fake", "--out", str(out), *extra])
    (run_dir,) = out.iterdir()
    return code, run_dir


def _fake_variants():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    return VariantSet(variants=[Variant.from_chat_model("only", model, quantization="F16")])


def test_run_writes_the_report_at_the_end(tmp_path, monkeypatch, capsys):
    code, run_dir = _cli_run(tmp_path, monkeypatch)
    assert code == 4  # the only variant is the reference: keep it
    page = run_dir / REPORT_DIR / REPORT_HTML
    assert page.is_file()
    assert f"report: {page}" in capsys.readouterr().out


def test_run_no_report(tmp_path, monkeypatch):
    code, run_dir = _cli_run(tmp_path, monkeypatch, "--no-report")
    assert code == 4  # the only variant is the reference: keep it
    assert not (run_dir / REPORT_DIR).exists()
    assert (run_dir / "decision.json").is_file()


def test_a_report_failure_keeps_the_run(tmp_path, monkeypatch, capsys):
    def broken(run_dir, **kwargs):
        raise RuntimeError("chart exploded")

    monkeypatch.setattr("quantgate.analysis._report.write_report", broken)
    code, run_dir = _cli_run(tmp_path, monkeypatch)
    assert code == 4  # the decision's exit status (keep the only variant, the reference), not the report's
    err = capsys.readouterr().err
    assert "the report could not be written (RuntimeError: chart exploded)" in err
    assert f"quantgate report {run_dir}" in err
    assert (run_dir / "records.jsonl").stat().st_size > 0
    assert (run_dir / "decision.json").is_file()


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(report, tmp_path):
    assert_renders_in_chromium(report, tmp_path)
