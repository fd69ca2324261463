"""The one timing of a streamed answer (`graphs.streamed`): with a fake model whose delays are
given, the time to first token and the mean gap between tokens are those delays, and a failure is
kept on the answer with its kind, never raised."""

import time

import httpx
import pytest

from graphs.streamed import ModelCallError, failure_kind, stream_timed
from tests.fakes import SLACK_S, DelayedChatModel, assert_delay


def test_time_to_first_token_and_the_gaps_between_tokens_are_the_delays_given():
    model = DelayedChatModel(steps=[(0.15, '{"a"'), (0.05, ": 1"), (0.05, ", "), (0.05, '"b": 2}')])
    answer = stream_timed(model, [])
    ttft, gap = answer.ttft_s(), answer.inter_token_s
    assert_delay(ttft, 0.15)
    assert_delay(gap, 0.05, SLACK_S / 2)  # (0.05 + 0.15) / 3 if TTFT counted
    assert_delay(answer.total_s(), 0.30)
    assert answer.chunks == 4  # the closing chunk without content is not a token
    assert answer.text == '{"a": 1, "b": 2}'
    assert answer.usage["output_tokens"] == 4
    assert answer.error is None


def test_times_can_be_measured_from_an_earlier_origin():
    model = DelayedChatModel(steps=[(0.1, "x")])
    answer = stream_timed(model, [])
    origin = answer.started - 1.0  # a request scheduled one second before it could be sent
    ttft = answer.ttft_s(origin)
    assert_delay(ttft, 1.1)
    assert answer.total_s(origin) == pytest.approx(answer.total_s() + 1.0)
    assert answer.inter_token_s is None  # one token: no gap


def test_an_answer_without_content_has_no_first_token():
    answer = stream_timed(DelayedChatModel(steps=[]), [])
    assert (answer.ttft_s(), answer.inter_token_s, answer.chunks, answer.text) == (None, None, 0, "")
    assert answer.last == answer.started


def test_a_failure_mid_stream_is_kept_with_what_came_before_it():
    cut = httpx.ReadTimeout("no byte in 30 s")
    answer = stream_timed(DelayedChatModel(steps=[(0.1, "{"), (0.05, '"a"'), (0.0, cut)]), [])
    assert answer.error is cut
    assert failure_kind(cut) == "timeout"
    assert answer.text == '{"a"'
    assert answer.chunks == 2
    ttft = answer.ttft_s()
    assert_delay(ttft, 0.1)
    assert answer.total_s() >= 0.15


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ReadTimeout("read"), "timeout"),
        (TimeoutError("read timeout"), "timeout"),
        (type("APITimeoutError", (Exception,), {})("late"), "timeout"),
        (type("timeout", (OSError,), {})("timed out"), "timeout"),  # the name's case does not matter
        (ConnectionError("server down"), "backend_error"),
        (ValueError("timeout in the message only"), "backend_error"),
        (ModelCallError("busy", "server busy", retryable=True), "busy"),
        (ModelCallError("timeout", "no first token in 60 s", retryable=False), "timeout"),
    ],
)
def test_a_failed_call_is_classified_by_its_kind_or_the_name_of_its_class(exc, kind):
    assert failure_kind(exc) == kind
    answer = stream_timed(DelayedChatModel(steps=[(0.0, exc)]), [])
    assert answer.error is exc
    assert (answer.ttft_s(), answer.message) == (None, None)


def test_the_time_is_taken_around_the_call():
    before = time.perf_counter()
    answer = stream_timed(DelayedChatModel(steps=[(0.02, "x")]), [])
    after = time.perf_counter()
    assert before <= answer.started <= answer.last <= answer.ended <= after
