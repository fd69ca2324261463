"""The report of a small real run (Gemma 3 270M F16 and Q4_K_M on 3 cases), opened in Chromium."""

import pytest

from quantgate.analysis._report import write_report
from quantgate.analysis._run_view import load_run_view
from tests.quantgate.browser import CHARTS, CHROMIUM, assert_renders_in_chromium

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_report_of_a_real_run(small_real_run, tmp_path):
    page = write_report(small_real_run)
    html = page.read_text(encoding="utf-8")
    view = load_run_view(small_real_run)
    assert view.variants == ("F16", "Q4_K_M")
    assert html.count('<img class="chart" src="data:image/png;base64,') == len(CHARTS)
    assert "Keep the reference, F16" in html  # 3 cases cannot show a quantized variant safe
    assert "max_accuracy_drop" in html
    fidelity = view.run.summary.variants[1].token_fidelity  # measured in the run, shown as is
    assert fidelity is not None
    assert fidelity.kld_mean is not None
    assert f'<td class="num">{fidelity.kld_mean:.4f}</td>' in html
    for case_id in view.records["F16"]:
        if case_id in set(view.records["Q4_K_M"]):
            assert view.case(case_id) is not None
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium): the page was written, not opened")
    assert_renders_in_chromium(page, tmp_path)
