"""The embedded backend's `chat_template` option without model weights: the text a variant sends is the
GGUF's template rendered independently here (jinja2 on the template string, with the same messages
and the task's tools), its tokens as llama-cpp-python reads a template's text, and a GGUF without a
template is refused, named, before any case runs (exit status 2)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from evaluators.errors import UsageError
from graphs.prompting import build_messages
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from tests.quantgate.backends.template_gguf import TOOLS_TEMPLATE, with_chat_template

llama_cpp = pytest.importorskip("llama_cpp")

_ROLES = {SystemMessage: "system", HumanMessage: "user", AIMessage: "assistant"}


@pytest.fixture(scope="module")
def templated(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Gemma 3 270M GGUF with `TOOLS_TEMPLATE` as its chat template."""
    return with_chat_template(gguf, tmp_path_factory.mktemp("template") / "templated.gguf", TOOLS_TEMPLATE)


@pytest.fixture(scope="module")
def vocab(templated: Path) -> Iterator[Any]:
    """The templated GGUF's tokenizer and metadata (no weights)."""
    llama = llama_cpp.Llama(str(templated), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def _first_case(dataset: Dataset) -> list[BaseMessage]:
    examples = [(example.text, example.expected or {}) for example in dataset.examples]
    return build_messages(
        schema=dataset.schema, examples=examples, text=dataset.cases[0].text, task=dataset.task
    )


def _rendered_here(template: str, messages: Sequence[BaseMessage], tools: list[dict[str, Any]]) -> str:
    """The template rendered with jinja2 itself; `tojson` as Hugging Face's templates have it (no key
    sorting, no HTML escaping), which jinja2's own filter is not."""
    environment = jinja2.Environment()
    environment.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    plain = [{"role": _ROLES[type(m)], "content": m.content} for m in messages]
    return environment.from_string(template).render(
        messages=plain, tools=tools, bos_token="<bos>", eos_token="<eos>", add_generation_prompt=True
    )


class _Decoder:
    """The one-sequence decoder's place: records the prompt tokens it is given, answers no call."""

    def __init__(self) -> None:
        self.prompts: list[list[int]] = []

    def generate(
        self, prompt: Sequence[int], grammar: str | None, max_tokens: int, stats: Any
    ) -> Iterator[str]:
        self.prompts.append(list(prompt))
        stats.prompt_tokens, stats.finish_reason = len(prompt), "stop"
        yield '{"call": null}'


def _engine(vocab: Any, templated: Path, decoder: _Decoder) -> Any:
    """An `EmbeddedEngine` over the vocabulary with the template, its decoder `decoder`."""
    from quantgate.backends.llamacpp._chat_template import ChatTemplate
    from quantgate.backends.llamacpp._engine import EmbeddedEngine

    engine = EmbeddedEngine.__new__(EmbeddedEngine)  # generation's plumbing needs no weights here
    engine.llama, engine.model_path, engine.scheduler = vocab, templated, None
    engine._decoder = decoder  # type: ignore[assignment]
    engine.prompt = ChatTemplate.of_model(vocab, templated)
    engine.lock, engine._grammars, engine.grammar_engine, engine.max_array_items = (
        threading.Lock(),
        {},
        "gbnf",
        20,
    )
    engine.score_labels, engine.n_ctx = False, 8192
    return engine


def test_a_variant_sends_the_templates_text_with_the_tasks_tools(vocab, templated) -> None:
    from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel

    dataset = load_dataset("tool-calls")
    messages = _first_case(dataset)
    tools = json.loads((dataset.path / "task.json").read_text(encoding="utf-8"))["tools"]
    expected = _rendered_here(TOOLS_TEMPLATE, messages, tools)
    decoder = _Decoder()
    model = LlamaCppChatModel(engine=_engine(vocab, templated, decoder), json_schema=dict(dataset.schema))

    assert model.prompt_text(messages) == expected
    answer = model.invoke(messages)
    assert answer.content == '{"call": null}'
    # the tokens decoded are the template's text read as llama-cpp-python reads it: one BOS (the
    # template's), the turn markers as Gemma's special tokens
    (sent,) = decoder.prompts
    assert sent == vocab.tokenize(expected.encode(), add_bos=False, special=True)
    start_of_turn = vocab.tokenize(b"<start_of_turn>", add_bos=False, special=True)
    assert len(start_of_turn) == 1
    assert sent[0] == vocab.token_bos()
    assert sent.count(vocab.token_bos()) == 1
    assert (
        sent.count(start_of_turn[0]) == 2 + 2 * len(dataset.examples) + 2
    )  # tools, system, pairs, case, answer
    assert expected.startswith(
        '<bos><start_of_turn>user\nTools: [{"type": "function", "function": {"name": "'
    )
    assert expected.endswith(f"{dataset.cases[0].text}<end_of_turn>\n<start_of_turn>model\n")
    assert answer.usage_metadata is not None
    assert answer.usage_metadata["input_tokens"] == len(sent)


def test_the_tools_the_template_renders_are_left_out_of_the_context_for_messages(vocab, templated) -> None:
    from quantgate.backends.llamacpp._chat_template import BasePrompt, ChatTemplate

    dataset = load_dataset("tool-calls")
    tools = json.loads((dataset.path / "task.json").read_text(encoding="utf-8"))["tools"]
    count = len(vocab.tokenize(json.dumps(tools, ensure_ascii=False).encode(), add_bos=False))
    assert count > 1000  # 11 tools
    assert (
        ChatTemplate.of_model(vocab, templated).tools_tokens(
            dataset.schema, lambda t: len(vocab.tokenize(t.encode(), add_bos=False))
        )
        == count
    )
    assert ChatTemplate.of_model(vocab, templated).tools_tokens(load_dataset("restaurants").schema, len) == 0
    assert BasePrompt().tools_tokens(dataset.schema, len) == 0


def test_the_record_names_the_template_by_its_sha256(vocab, templated) -> None:
    import hashlib

    from quantgate.backends.llamacpp._chat_template import BasePrompt, ChatTemplate

    record = ChatTemplate.of_model(vocab, templated).record()
    assert record["chat_template_sha256"] == hashlib.sha256(TOOLS_TEMPLATE.encode()).hexdigest()
    assert "tokenizer.chat_template" in record["prompt"]
    assert BasePrompt().record()["chat_template_sha256"] is None


def test_a_gguf_without_a_template_is_named(gguf: Path, templated: Path) -> None:
    from quantgate.backends.llamacpp._chat_template import ChatTemplate, missing_chat_template

    assert missing_chat_template(templated) is None
    problem = missing_chat_template(gguf)
    assert problem is not None
    assert problem.startswith(f"{gguf} has no chat template (tokenizer.chat_template")
    llama = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)
    try:
        with pytest.raises(ValueError, match=f"^{gguf} has no chat template"):
            ChatTemplate.of_model(llama, gguf)
    finally:
        llama.close()


class _Untemplated:
    """A loaded model without a chat template: records whether it was freed."""

    def __init__(self) -> None:
        self.metadata: dict[str, str] = {}
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_engine_frees_a_model_without_a_template(gguf: Path) -> None:
    from quantgate.backends.llamacpp._chat_template import ChatTemplate

    kept, freed = _Untemplated(), _Untemplated()
    for model, free in ((kept, False), (freed, True)):
        with pytest.raises(ValueError, match="has no chat template"):
            ChatTemplate.of_model(model, gguf, free_on_error=free)
    assert (kept.closed, freed.closed) == (False, True)


def _variants(model: Path, **options: Any) -> VariantSet:
    return VariantSet(variants=[Variant(name="it", backend="llamacpp", model=str(model), options=options)])


def test_the_option_is_checked_against_the_file_before_any_model_loads(gguf: Path, templated: Path) -> None:
    from quantgate.cli._common import check_variant_files

    with pytest.raises(UsageError, match=f"^variant 'it': {gguf} has no chat template"):
        check_variant_files(_variants(gguf, chat_template=True))
    check_variant_files(_variants(templated, chat_template=True))
    check_variant_files(_variants(gguf, chat_template=False))  # the base-model prompt needs none
    check_variant_files(_variants(gguf))


def test_a_run_with_the_option_on_a_gguf_without_a_template_exits_2(
    gguf: Path, tmp_path: Path, capsys
) -> None:
    from quantgate.cli._main import main

    variants = tmp_path / "variants.toml"
    spec = f'name = "it"\nbackend = "llamacpp"\nmodel = "{gguf}"\noptions = {{ chat_template = true }}\n'
    variants.write_text(f"[[variants]]\n{spec}", encoding="utf-8")
    out = tmp_path / "runs"
    assert main(["run", "--dataset", "tool-calls", "--variants", str(variants), "--out", str(out)]) == 2
    assert f"variant 'it': {gguf} has no chat template" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())  # no run started


def test_token_fidelity_pairs_only_variants_that_read_the_same_prompt(gguf: Path, templated: Path) -> None:
    from quantgate.evaluate.token_fidelity._run_step import unmeasured_reason

    it = Variant(name="it", backend="llamacpp", model=str(templated), options={"chat_template": True})
    it_q4 = Variant(name="it-q4", backend="llamacpp", model=str(templated), options={"chat_template": True})
    base = Variant(name="base", backend="llamacpp", model=str(gguf))
    assert unmeasured_reason(it_q4, it, enabled=True) is None
    assert unmeasured_reason(base, base, enabled=True) is None
    assert unmeasured_reason(base, it, enabled=True) == (
        "not measured: this variant reads the base-model prompt and the reference the GGUF's chat "
        "template; token fidelity compares them on the same prompt"
    )
    assert unmeasured_reason(it, base, enabled=True) == (
        "not measured: this variant reads the GGUF's chat template and the reference the base-model "
        "prompt; token fidelity compares them on the same prompt"
    )


def test_a_template_that_does_not_compile_is_named_with_its_line(tmp_path: Path) -> None:
    from quantgate.backends.llamacpp._chat_template import missing_chat_template
    from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf

    tiny = write_tiny_gguf(tmp_path / "tiny.gguf")
    broken = with_chat_template(
        tiny, tmp_path / "broken.gguf", "{{ bos_token }}\n{% for m in messages %}{{ m }}"
    )
    assert missing_chat_template(broken) == (
        f"{broken}: its chat template is not a valid Jinja2 template (line 2): Unexpected end of template. "
        "Jinja was looking for the following tags: 'endfor' or 'else'. The innermost block that needs to be "
        "closed is 'for'."
    )
    assert missing_chat_template(with_chat_template(tiny, tmp_path / "ok.gguf", TOOLS_TEMPLATE)) is None


def _own_tool(name: str, words: int) -> dict[str, Any]:
    """A tool in the order the template's tools are written (`task_tools`), `words` words long."""
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return {
        "type": "function",
        "function": {"name": name, "description": "about " * words, "parameters": parameters},
    }


def _case_tools_dataset(root: Path, calls: str = "one") -> Dataset:
    """Three cases, each bringing its own long tool (task.json offers none): any one fits in the
    context with its case, all three do not."""
    root.mkdir()
    (root / "task.json").write_text(json.dumps({"kind": "tool_calling", "tools": [], "calls": calls}))
    empty: dict[str, Any] = {"call": None} if calls == "one" else {"calls": []}
    lines = [
        {
            "id": f"c{i}",
            "text": f"weather in city {i} " * 20,
            "expected": empty,
            "tools": [_own_tool(f"t{i}", 1000)],
        }
        for i in range(3)
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return load_dataset(root)


@contextmanager
def _opened(vocab: Any, templated: Path, dataset: Dataset, decoder: _Decoder) -> Iterator[Any]:
    """`open_llamacpp` of a chat-template variant over the vocabulary (an engine that decodes with
    `decoder`, in a context of 4,096 tokens)."""
    from quantgate.backends.llamacpp import _llamacpp

    engine = _engine(vocab, templated, decoder)
    engine.n_ctx, engine.n_threads, engine.slots, engine.flash_attn, engine.seed = 4096, 1, None, False, 0
    engine.fast_forward, engine.kv = False, SimpleNamespace(record=dict)
    engine.close = lambda: None  # the vocabulary is the module's
    variant = Variant(name="it", backend="llamacpp", model=str(templated), options={"chat_template": True})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_llamacpp, "EmbeddedEngine", lambda *args, **kwargs: engine)
        with _llamacpp.open_llamacpp(variant, dataset.schema) as opened:
            yield opened


def test_a_case_with_its_own_tools_reads_them_alone_through_the_template(vocab, templated, tmp_path) -> None:
    """The template renders the case's tools (those its grammar allows), not every case's; the
    context left for the case's text is what its own tools leave (all three would leave none);
    token fidelity reads the very prompt the case was sent."""
    from graphs.extraction import graph
    from graphs.long_inputs import prompt_messages
    from quantgate.backends._extraction_context import case_context, variant_context
    from quantgate.evaluate.token_fidelity._measurement import case_prompt

    dataset = _case_tools_dataset(tmp_path / "own")
    decoder = _Decoder()
    with _opened(vocab, templated, dataset, decoder) as opened:
        context = variant_context(dataset, opened, max_repairs=0)
        for i, case in enumerate(dataset.cases):
            own = case_context(context, dataset, case.id)
            messages, dropped = prompt_messages(own, case.text)
            assert dropped == 0  # all three tools' tokens would leave the text no room
            assert messages[-1].content == case.text
            expected = _rendered_here(TOOLS_TEMPLATE, messages, [_own_tool(f"t{i}", 1000)])
            graph.invoke({"text": case.text}, context=own)
            assert decoder.prompts[-1] == vocab.tokenize(expected.encode(), add_bos=False, special=True)
            assert case_prompt(own, case.text) == expected


def test_a_case_with_several_calls_reads_its_tools_through_the_template(vocab, templated, tmp_path) -> None:
    from quantgate.backends._extraction_context import case_context, variant_context
    from quantgate.evaluate.token_fidelity._measurement import case_prompt

    dataset = _case_tools_dataset(tmp_path / "many", calls="many")
    with _opened(vocab, templated, dataset, _Decoder()) as opened:
        context = variant_context(dataset, opened, max_repairs=0)
        own = case_context(context, dataset, "c1")
        text = case_prompt(own, dataset.cases[1].text)
    assert f"Tools: {json.dumps([_own_tool('t1', 1000)], ensure_ascii=False)}<end_of_turn>" in text
    assert '"t0"' not in text
