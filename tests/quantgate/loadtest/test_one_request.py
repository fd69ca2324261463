"""One load-test request as recorded (`quantgate.loadtest._one_request`): its times come from the
shared stream timing (`graphs.streamed`), measured from the scheduled arrival when there is one,
and a failure is recorded with its kind and message, never raised."""

import httpx
import pytest

from graphs.streamed import ModelCallError
from quantgate.loadtest._one_request import stream_request
from tests.fakes import SLACK_S, DelayedChatModel, assert_delay


def request(model, *, check=lambda raw: True, t0=0.0, arrived=None):
    return stream_request(
        lambda case_id: model,
        ("c1", []),
        lambda case_id, raw: check(raw),
        level="p",
        slot=1,
        t0=t0,
        arrived=arrived,
    )


def test_an_answer_is_timed_from_sending_with_its_gaps_and_tokens():
    done = request(DelayedChatModel(steps=[(0.12, "{"), (0.04, '"a": 1'), (0.04, "}")]))
    assert (done.level, done.slot, done.case_id, done.valid, done.error_kind) == ("p", 1, "c1", True, None)
    assert_delay(done.ttft_s, 0.12)
    assert_delay(done.inter_token_s, 0.04, SLACK_S / 2)
    assert done.total_s >= 0.2
    assert done.output_tokens == 3
    assert done.queued_s is None


def test_an_open_loop_request_is_timed_from_its_arrival():
    from time import perf_counter

    arrived = perf_counter() - 0.5  # scheduled half a second ago: it waited in the client
    done = request(DelayedChatModel(steps=[(0.1, "{}")]), t0=arrived - 2.0, arrived=arrived)
    assert_delay(done.queued_s, 0.5)
    assert_delay(done.ttft_s, 0.6)
    assert done.started_s == pytest.approx(2.0)


def test_a_timeout_mid_stream_is_recorded_with_its_kind_and_class():
    model = DelayedChatModel(steps=[(0.05, "{"), (0.0, httpx.ReadTimeout("no byte in 30 s"))])
    done = request(model)
    assert (done.error_kind, done.error) == ("timeout", "ReadTimeout: no byte in 30 s")
    assert (done.valid, done.output_tokens, done.inter_token_s) == (None, None, None)
    assert_delay(done.ttft_s, 0.05)  # what came before counts


def test_a_model_call_error_is_recorded_with_its_own_kind_and_message():
    busy = ModelCallError("busy", "server busy (503): try later", retryable=True)
    done = request(DelayedChatModel(steps=[(0.0, busy)]))
    assert (done.error_kind, done.error) == ("busy", "server busy (503): try later")
    assert (done.ttft_s, done.valid) == (None, None)
    other = request(DelayedChatModel(steps=[(0.0, ConnectionError("refused"))]))
    assert (other.error_kind, other.error) == ("backend_error", "ConnectionError: refused")


def test_an_answer_that_fails_the_check_keeps_its_token_count():
    done = request(DelayedChatModel(steps=[(0.0, "not json")]), check=lambda raw: raw == "{}")
    assert (done.error_kind, done.valid, done.output_tokens) == ("invalid_output", False, 1)
