import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from graphs.evaluation import error_kind
from graphs.extraction import ExtractionContext, ExtractionResult, build_extraction_graph, graph
from graphs.long_inputs import CUT_MARK
from graphs.prompting import REPAIR_NAME
from tests.fakes import GOOD, SCHEMA, QueuedChatModel


def run(model, text="Factura de Acme por 12,50 €", **kwargs):
    context = ExtractionContext(model=model, schema=SCHEMA, **kwargs)
    return ExtractionResult.from_output(graph.invoke({"text": text}, context=context))


def test_valid_output_in_one_attempt_with_usage_and_timings():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    result = run(model)
    assert result.valid
    assert result.record == GOOD
    assert len(result.attempts) == 1
    attempt = result.attempts[0]
    assert attempt["input_tokens"] == 100
    assert attempt["output_tokens"] > 1
    assert attempt["ttft_s"] is not None
    assert 0 <= attempt["ttft_s"] <= attempt["total_s"]
    assert attempt["finish_reason"] == "stop"


def test_prompt_has_field_descriptions_and_few_shot_examples():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    run(model, examples=[("Bill from Foo, $3", {**GOOD, "vendor": "Foo"})])
    messages = model.calls[0]
    assert isinstance(messages[0], SystemMessage)
    assert "- vendor (text, or null): Who issued it" in messages[0].content
    assert '- currency (one of "EUR", "USD", null' in messages[0].content
    assert isinstance(messages[1], HumanMessage)
    assert messages[1].content == "Bill from Foo, $3"
    assert isinstance(messages[2], AIMessage)
    assert json.loads(messages[2].text)["vendor"] == "Foo"
    assert messages[-1].content == "Factura de Acme por 12,50 €"


def test_repair_loop_feeds_the_error_back_and_recovers():
    model = QueuedChatModel(outputs=['{"vendor": "Acme", "total": "doce"', json.dumps(GOOD)])
    result = run(model)
    assert result.valid
    assert len(result.attempts) == 2
    repair = model.calls[1][-1]
    assert repair.name == REPAIR_NAME
    assert "not valid JSON" in repair.content
    assert model.calls[1][-2].content == '{"vendor": "Acme", "total": "doce"'


def test_repair_loop_is_bounded():
    model = QueuedChatModel(outputs=['{"vendor": 5, "total": null, "issued": null, "currency": null}'])
    result = run(model, max_repairs=2)
    assert not result.valid
    assert len(result.attempts) == 3
    assert result.validation_errors == ["vendor: 5 is not of type 'string', 'null'"]
    assert result.error is None


def test_an_answer_cut_at_the_output_limit_is_not_repaired_and_says_why():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], max_tokens=3)  # 21 characters of the JSON
    result = run(model, max_repairs=2, max_output_tokens=3)
    assert (result.valid, result.output_limit, len(result.attempts)) == (False, True, 1)
    assert result.attempts[0]["finish_reason"] == "length"
    assert result.validation_errors[-1] == (
        "the answer reached the output limit (3 tokens) before the JSON was complete; no repair was "
        "asked for, since a repair would get the same limit: raise the variant's max_tokens option "
        "(now 3) if records of this schema need more"
    )
    assert error_kind(result) == "output_limit"
    complete = run(QueuedChatModel(outputs=[json.dumps(GOOD)], max_tokens=100))  # within the limit
    assert (complete.valid, complete.output_limit, error_kind(complete)) == (True, False, None)


def test_normalize_fixes_what_it_can_without_a_repair():
    raw = json.dumps({**GOOD, "total": "12,50 €", "issued": "3 de marzo de 2024", "vendor": " "})
    model = QueuedChatModel(outputs=[raw])
    result = run(model)
    assert result.valid
    assert len(result.attempts) == 1
    assert result.record == {**GOOD, "vendor": None}
    assert result.raw == raw


def test_what_normalize_cannot_fix_is_repaired():
    model = QueuedChatModel(outputs=[json.dumps({**GOOD, "total": "doce euros"}), json.dumps(GOOD)])
    result = run(model)
    assert result.valid
    assert len(result.attempts) == 2
    assert "total: 'doce euros' is not of type 'number', 'null'" in model.calls[1][-1].content


def test_backend_error_is_recorded_not_raised():
    model = QueuedChatModel(outputs=[ConnectionError("server down")])
    result = run(model)
    assert not result.valid
    assert result.error == "ConnectionError: server down"
    assert result.record is None


def test_long_input_is_truncated_and_recorded():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    words = [f"w{i}" for i in range(5000)]
    result = run(
        model,
        text=" ".join(words),
        context_window=2048,
        max_output_tokens=256,
        count_tokens=lambda s: len(s.split()),
    )
    assert result.truncated
    sent = model.calls[0][-1].text
    head, tail = sent.split(CUT_MARK)
    kept_head, kept_tail = head.split(), tail.split()
    # the beginning and the end, the middle dropped (each cut may fall inside a word)
    assert kept_head[:-1] == words[: len(kept_head) - 1]
    assert kept_tail[1:] == words[len(words) - len(kept_tail) + 1 :]
    assert 1.5 < len(kept_head) / len(kept_tail) < 2.5  # two thirds of the budget to the beginning
    assert len(kept_head) + len(kept_tail) + result.input_tokens_dropped == 5000
    assert 1000 < result.input_tokens_dropped < 5000
    short = run(
        QueuedChatModel(outputs=[json.dumps(GOOD)]),
        context_window=2048,
        count_tokens=lambda s: len(s.split()),
    )
    assert not short.truncated
    assert short.input_tokens_dropped == 0


@pytest.mark.parametrize("window", [None, 100000])
def test_no_truncation_without_need(window):
    result = run(QueuedChatModel(outputs=[json.dumps(GOOD)]), context_window=window)
    assert not result.truncated


def test_builder_compiles_a_fresh_graph():
    assert build_extraction_graph() is not graph
    assert set(graph.get_graph().nodes) >= {"prepare", "extract", "validate", "repair", "normalize"}


def test_retryable_model_errors_are_retried_and_counted():
    from graphs.streamed import ModelCallError

    busy = ModelCallError("busy", "server busy", retryable=True)
    model = QueuedChatModel(outputs=[busy, busy, json.dumps(GOOD)])
    result = run(model, retry_backoff_s=0.0)
    assert result.valid
    assert result.retries == 2
    assert result.attempts[0]["retries"] == 2
    assert len(result.attempts) == 1


def test_model_errors_end_the_case_with_their_kind():
    from graphs.streamed import ModelCallError

    gone = ModelCallError("not_found", "model 'x' not found", retryable=False)
    result = run(QueuedChatModel(outputs=[gone]), retry_backoff_s=0.0)
    assert (result.error_kind, result.retries, result.valid) == ("not_found", 0, False)
    assert result.error == "ModelCallError: model 'x' not found"
    busy = ModelCallError("busy", "server busy", retryable=True)
    exhausted = run(QueuedChatModel(outputs=[busy]), retry_backoff_s=0.0, max_retries=3)
    assert (exhausted.error_kind, exhausted.retries) == ("busy", 3)


def test_reported_numeric_metadata_is_kept():
    result = run(QueuedChatModel(outputs=[json.dumps(GOOD)]))
    assert result.attempts[0]["reported"] == {"eval_count": result.attempts[0]["output_tokens"]}
