"""Verification through an OpenAI-compatible server (`verify = "echo"` or `"prompt_logprobs"`), without a
model: the recording completions server of `test_openai_completions` answers each request that is
not streamed with scripted log-probabilities of the given text, in llama-cpp-python's and vLLM's
forms, and streams its answer to the others. The requests are counted: a verified answer sends
none to decode."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from quantgate.backends import BackendError, OptionsError, backend_options, capabilities, open_variant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.openai._openai_verdict import read_verdict
from quantgate.backends.openai._openai_verify import DECODED, NO_VERIFICATION, VerifyingChatModel
from quantgate.evaluate._evaluation_run import run_evaluation
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate.scheduler._verification import verification_missing
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from tests.quantgate.backends.test_openai_completions import ANSWER, ASK, SCHEMA, Behaviour, serve

GIVEN = "".join(ANSWER)
PROMPT = render_prompt(ASK)
PROBE_GRAMMAR = 'root ::= "zqxv"'


def tokenize(text: str) -> list[str]:
    """The double's tokenizer: words and numbers with their leading spaces, each other character alone."""
    return re.findall(r"\s*\w+|\s*[^\w\s]|\s+", text)


@dataclass
class Scorer:
    """The double's log-probabilities of given text: the prompt and the answer read (the answer is what
    follows the rendered prompt's last `JSON:`), each position's top-1 the token there unless `differ`
    names it (an answer token's index, in a prompt holding `differ_when`), then `end`: `stop` (the
    model ends; with `eos_listed` the end token is listed, as vLLM lists it) or `length` (it writes a
    newline). `status` fails the request; `lists = False` leaves the lists out; `merge` reads the
    prompt's last character and the answer's first as one token; `sleep_s` delays the answer."""

    form: str = "echo"
    differ: int | None = None
    differ_when: str = ""
    end: str = "stop"
    eos_listed: bool = False
    status: int = 200
    lists: bool = True
    merge: bool = False
    sleep_s: float = 0.0

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(self.sleep_s)
        if self.status != 200:
            return self.status, {"error": {"message": "the scorer crashed"}}
        text = body["prompt"]
        cut = text.rindex("JSON:") + len("JSON:")
        prompt, answer = tokenize(text[:cut]), tokenize(text[cut:])
        if self.merge:
            prompt, answer = prompt[:-1], [prompt[-1] + answer[0], *answer[1:]]
        differ = self.differ if self.differ_when in text else None
        tops = [None] + [{t: -0.1} for t in prompt[1:]]
        tops += [{"X": -0.1, t: -2.0} if k == differ else {t: -0.1} for k, t in enumerate(answer)]
        generated = ["\n"] if self.end == "length" else ["</s>"] if self.eos_listed else []
        choice = {"index": 0, "finish_reason": self.end}
        read = prompt + answer
        usage = {"prompt_tokens": len(read), "completion_tokens": len(generated)}
        if self.form == "echo":
            tokens = read + generated
            offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
            echoed = text + ("\n" if self.end == "length" else "")
            listed = tops + [{"\n": -0.1}] * len(generated)
            logprobs = {"tokens": tokens, "text_offset": offsets, "top_logprobs": listed,
                        "token_logprobs": [None] * len(tokens)}  # fmt: skip
            choice.update(text=echoed, logprobs=logprobs if self.lists else None)
        else:
            choice.update(
                text="\n" if self.end == "length" else "",
                prompt_logprobs=_vllm(read, tops) if self.lists else None,
            )
        return 200, {"id": "v", "object": "text_completion", "choices": [choice], "usage": usage}


def _vllm(tokens: list[str], tops: list[dict[str, float] | None]) -> list[Any]:
    """vLLM's `prompt_logprobs`: per token (the first None) its id to `{logprob, rank, decoded_token}`,
    the top-1 (rank 1) and the token read when it is not the top-1."""
    ids = {token: str(i) for i, token in enumerate(dict.fromkeys([*tokens, "X"]))}
    lists: list[Any] = []
    for token, top in zip(tokens, tops, strict=True):
        if top is None:
            lists.append(None)
            continue
        best = max(top, key=top.__getitem__)
        entry = {ids[best]: {"logprob": -0.1, "rank": 1, "decoded_token": best}}
        if best != token:
            entry[ids[token]] = {"logprob": -2.0, "rank": 5, "decoded_token": token}
        lists.append(entry)
    return lists


@pytest.fixture
def scored() -> Iterator[tuple[Behaviour, str]]:
    behaviour = Behaviour(scores=Scorer())
    server = serve(behaviour)
    yield behaviour, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def verifying(url: str, verify: str = "echo", **options: Any) -> Variant:
    options = {"base_url": url, "api": "completions", "timeout_s": 10, "verify": verify, "seed": 7, **options}
    return Variant(name="served", backend="openai", model="q4_k_m", options=options)


def decodings(behaviour: Behaviour) -> list[dict[str, Any]]:
    """The requests that decoded an answer (streamed, not the open's probe)."""
    return [b for b in behaviour.bodies if b.get("stream") and b.get("grammar") != PROBE_GRAMMAR]


def verifications(behaviour: Behaviour) -> list[dict[str, Any]]:
    return [b for b in behaviour.bodies if not b.get("stream")]


def ask(behaviour: Behaviour, url: str, scorer: Scorer, **options: Any) -> Any:
    behaviour.scores = scorer
    with open_variant(verifying(url, scorer.form, **options), SCHEMA) as opened:
        return opened.chat_model.invoke(ASK, answer={"text": GIVEN})


ANSWER_TOKENS = len(tokenize(GIVEN))


@pytest.mark.parametrize(
    "scorer",
    [Scorer(), Scorer(eos_listed=True), Scorer(form="prompt_logprobs")],
    ids=["echo, llama-cpp-python", "echo, vLLM lists the end token", "vLLM prompt_logprobs"],
)
def test_an_answer_the_server_agrees_with_everywhere_is_verified_with_no_decoding(scored, scorer):
    behaviour, url = scored
    answer = ask(behaviour, url, scorer, extra_body={"repeat_penalty": 1.0})
    assert answer.text == GIVEN
    metadata = answer.response_metadata
    assert (metadata["obtained"], metadata["finish_reason"]) == ("verified", "stop")
    assert metadata["answer_tokens"] == metadata["verified_tokens"] == ANSWER_TOKENS == 15
    assert metadata["verification_s"] > 0
    assert "unverified_reason" not in metadata
    assert answer.usage_metadata["output_tokens"] == ANSWER_TOKENS
    assert answer.usage_metadata["input_tokens"] == len(tokenize(PROMPT))
    assert decodings(behaviour) == []  # nothing decoded
    (body,) = verifications(behaviour)
    assert body["path"] == "/v1/completions"
    assert body["prompt"] == PROMPT + GIVEN
    assert (body["max_tokens"], body["temperature"], body["seed"], body["logprobs"]) == (1, 0.0, 7, 1)
    assert body["repeat_penalty"] == 1.0  # the variant's extra_body
    assert "grammar" not in body  # the top-1 unconstrained: the grammar would start a new answer
    if scorer.form == "echo":
        assert (body["echo"], "prompt_logprobs" in body) == (True, False)
    else:
        assert (body["prompt_logprobs"], "echo" in body) == (1, False)


@pytest.mark.parametrize("form", ["echo", "prompt_logprobs"])
def test_a_difference_at_a_position_decodes_the_whole_answer_and_records_where(scored, form):
    behaviour, url = scored
    answer = ask(behaviour, url, Scorer(form=form, differ=5))
    assert answer.text == GIVEN  # the double decodes the same text
    metadata = answer.response_metadata
    assert metadata["obtained"] == "decoded"
    assert (metadata["verified_tokens"], metadata["answer_tokens"]) == (5, ANSWER_TOKENS)
    fifth = tokenize(GIVEN)[5]
    assert metadata["unverified_reason"] == (
        f"at answer token 5 of {ANSWER_TOKENS} the server's top-1 is 'X', not {fifth!r}: {DECODED}"
    )
    assert metadata["finish_reason"] == "stop"  # the decoding's
    assert len(decodings(behaviour)) == 1
    assert decodings(behaviour)[0]["prompt"] == PROMPT  # decoded from the prompt, with its grammar
    assert "grammar" in decodings(behaviour)[0]


@pytest.mark.parametrize("form", ["echo", "prompt_logprobs"])
def test_an_answer_the_model_would_not_end_is_decoded(scored, form):
    behaviour, url = scored
    metadata = ask(behaviour, url, Scorer(form=form, end="length")).response_metadata
    assert (metadata["obtained"], metadata["verified_tokens"]) == ("decoded", ANSWER_TOKENS)
    assert metadata["unverified_reason"].startswith("after the answer the model writes '\\n', not its end")
    assert len(decodings(behaviour)) == 1


@pytest.mark.parametrize(
    ("scorer", "reason"),
    [
        (Scorer(status=500), "the verification request failed: OpenAI-compatible server at "),
        (Scorer(lists=False), "the server's echo has no logprobs lists"),
        (Scorer(form="prompt_logprobs", lists=False), "the server's answer has no prompt_logprobs (vLLM's"),
        (Scorer(merge=True), "the server reads the prompt's end and the answer's start as one token (':{')"),
    ],
    ids=["500", "echo without lists", "no prompt_logprobs", "a token across the boundary"],
)
def test_a_server_that_cannot_verify_decodes_and_says_why(scored, scorer, reason):
    behaviour, url = scored
    answer = ask(behaviour, url, scorer)
    assert answer.text == GIVEN
    metadata = answer.response_metadata
    assert metadata["obtained"] == "decoded"
    assert metadata["unverified_reason"].startswith(reason)
    assert metadata["unverified_reason"].endswith(DECODED)
    assert len(decodings(behaviour)) == len(verifications(behaviour)) == 1
    if scorer.status == 500:
        assert "answered 500 to completions: the scorer crashed" in metadata["unverified_reason"]
        assert "answer_tokens" not in metadata  # the answer's tokens are unknown


def test_a_verification_request_past_timeout_s_decodes(scored):
    behaviour, url = scored
    behaviour.scores = Scorer(sleep_s=1.5)
    variant = verifying(url, timeout_s=0.5)
    with open_variant(variant, SCHEMA) as opened:
        answer = opened.chat_model.invoke(ASK, answer=GIVEN)  # a bare text is taken too
    assert answer.response_metadata["obtained"] == "decoded"
    assert "the verification request failed" in answer.response_metadata["unverified_reason"]
    assert "timed out" in answer.response_metadata["unverified_reason"]


def test_without_an_answer_the_variant_decodes_and_drops_the_reference_s_options(scored):
    behaviour, url = scored
    with open_variant(verifying(url), SCHEMA) as opened:
        answer = opened.chat_model.invoke(ASK, top_logprobs=True, lookup=True)
        runtime, model = opened.runtime, opened.chat_model
    assert isinstance(model, VerifyingChatModel)
    assert model.verifier.forcing.client.is_closed  # closed with the variant
    assert answer.response_metadata["obtained"] == "decoded"
    assert "answer_tokens" not in answer.response_metadata
    assert verifications(behaviour) == []
    assert "top_logprobs" not in decodings(behaviour)[0]  # a reference's options, not sent to the server
    assert "lookup" not in decodings(behaviour)[0]
    assert runtime["verify"] == "echo"


def test_the_option_declares_verification_and_a_bad_value_is_refused_by_name(scored):
    _, url = scored
    on, off = verifying(url), verifying(url, verify="off")
    assert (capabilities(on).verification, capabilities(off).verification) == (True, False)
    options = RunOptions(progress=False)
    assert verification_missing(on, options) is None
    assert verification_missing(off, options) == f"{NO_VERIFICATION}: every case was decoded"
    ollama = Variant(name="o", backend="ollama", model="gemma3:270m")
    missing = verification_missing(ollama, options)
    assert missing is not None
    assert missing.startswith("Ollama's API returns no log-probabilities of given text")
    wrong = verifying(url, verify="yes")
    with pytest.raises(
        OptionsError, match=r"variant 'served': options\.verify: Input should be 'off', 'echo' or"
    ):
        backend_options(wrong)
    assert capabilities(wrong).verification is False  # refused options decide nothing (the check names them)
    both = verifying(url, api="chat", native_tools=True)
    assert capabilities(both).verification is False
    with pytest.raises(
        BackendError, match=r"variant served: verify = 'echo' reads the answer's text.*native_tools"
    ):
        open_variant(both, SCHEMA).__enter__()


def test_read_verdict_names_a_server_that_does_not_echo():
    not_echoed = {"choices": [{"text": "}", "finish_reason": "length", "logprobs": None}]}
    verdict = read_verdict("echo", not_echoed, PROMPT, GIVEN)
    assert (verdict.verified, verdict.answer_tokens) == (False, None)
    assert verdict.reason is not None
    assert verdict.reason.endswith("it does not take echo (llama.cpp's llama-server ignores it)")
    assert (
        read_verdict("echo", {"choices": []}, PROMPT, GIVEN).reason
        == "the server's answer has no choices: {'choices': []}"
    )


@pytest.mark.slow
def test_a_run_hands_an_openai_candidate_the_reference_s_answers_and_counts_those_verified(scored, tmp_path):
    behaviour, url = scored
    behaviour.scores = Scorer(differ=3, differ_when="case <4>")  # the candidate would leave case 4's answer
    record = json.loads(GIVEN)
    cases = [Case(id=f"c{i}", text=f"case <{i}>", expected=record) for i in range(6)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=cases, examples=[Case(id="e", text="e", expected=record)]
    )
    reference = Variant(name="f16", backend="openai", model="f16", options=verifying(url, "off").options)
    variants = VariantSet(
        reference="f16", variants=[reference, verifying(url).model_copy(update={"name": "q4"})]
    )
    settings = RunOptions(
        out=tmp_path / "runs",
        progress=False,
        token_fidelity=False,
        round_size=3,
        concurrency=1,
        latency_cases=2,
    )
    run = run_evaluation(load_dataset(tmp_path / "d"), variants, options=settings)
    q4 = load_run(run).summary.entry("q4")
    assert q4 is not None
    assert (q4.verified_cases, q4.verified_then_decoded_cases, q4.decoded_cases) == (3, 0, 3)
    assert q4.verification_missing is None
    assert q4.verified_token_share == pytest.approx((3 * 15 + 3) / (4 * 15))
    assert q4.cases_timed == 2  # the latency sample, decoded in full
    records = {r.case_id: r for r in read_records(run) if r.variant == "q4"}
    obtained = [records[f"c{i}"].obtained for i in range(6)]
    assert obtained == ["decoded", "decoded", "verified", "verified", "decoded", "verified"]
    assert (records["c2"].ttft_s, records["c2"].total_s) == (None, None)  # a verified case: no latency
    assert records["c0"].ttft_s is not None
    (c4,) = records["c4"].attempt_timings
    assert c4["unverified_reason"].startswith("at answer token 3 of 15 the server's top-1 is 'X'")
    asked = sorted(re.findall(r"case <(\d)>\nJSON:", " ".join(b["prompt"] for b in verifications(behaviour))))
    assert asked == ["2", "3", "4", "5"]  # none of the latency sample
