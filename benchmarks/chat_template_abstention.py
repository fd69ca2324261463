"""Does a chat template change the bundled base model's abstention on tool calls?

On the first `--called` cases of `tool-calls` whose gold is a call and the first `--none` whose gold
is no call (in `cases.jsonl` order), the ladder's F16 answers each case's first attempt twice: with
the base-model prompt (the default) and with the `chat_template` option on a copy of the same GGUF
into which `--template FILE` (a Jinja chat template, e.g. Gemma 3 IT's, from its
`tokenizer_config.json`) is written. It prints, per prompt, the cases with no call where one is due,
with no call where none is due, with the right tool and with the exact call. Nothing is timed.

    python benchmarks/chat_template_abstention.py --template gemma3.jinja [--called 20] [--none 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from graphs.long_inputs import prompt_messages
from quantgate.backends._extraction_context import variant_context
from quantgate.backends.llamacpp._llamacpp import open_llamacpp
from quantgate.inputs._dataset import Case, Dataset, load_dataset
from quantgate.inputs._variants import Variant
from quantgate.ladder import default_ladder_dir
from tests.quantgate.backends.template_gguf import with_chat_template


def _answers(dataset: Dataset, cases: list[Case], variant: Variant) -> dict[str, Any]:
    """Each case's call (None: no call), or `invalid: ...` for an answer that is not a record."""
    answers: dict[str, Any] = {}
    with open_llamacpp(variant, dataset.schema, slots=None) as opened:
        context = variant_context(dataset, opened)
        for case in cases:
            raw = str(opened.chat_model.invoke(prompt_messages(context, case.text)[0]).content)
            try:
                answers[case.id] = json.loads(raw)["call"]
            except (json.JSONDecodeError, KeyError, TypeError):
                answers[case.id] = f"invalid: {raw[:80]}"
    return answers


def tally(answers: dict[str, Any], called: list[Case], none: list[Case]) -> dict[str, int]:
    """The four counts the docs show."""

    def gold(case: Case) -> dict[str, Any]:
        call: dict[str, Any] = (case.expected or {})["call"]
        return call

    return {
        "no_call_where_due": sum(answers[c.id] is None for c in called),
        "no_call_where_none_due": sum(answers[c.id] is None for c in none),
        "right_tool": sum(
            isinstance(answers[c.id], dict) and answers[c.id].get("name") == gold(c)["name"] for c in called
        ),
        "exact_call": sum(answers[c.id] == gold(c) for c in called),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, required=True, help="a Jinja chat template file")
    parser.add_argument("--called", type=int, default=20)
    parser.add_argument("--none", type=int, default=10)
    args = parser.parse_args()
    dataset = load_dataset("tool-calls")
    called = [c for c in dataset.cases if (c.expected or {}).get("call") is not None][: args.called]
    none = [c for c in dataset.cases if (c.expected or {}).get("call") is None][: args.none]
    source = default_ladder_dir() / "gemma-3-270m-F16.gguf"
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "gemma-3-270m-F16-template.gguf"
        with_chat_template(source, copy, args.template.read_text(encoding="utf-8"))
        for label, path, options in (
            ("base prompt", source, {}),
            ("chat template", copy, {"chat_template": True}),
        ):
            variant = Variant(
                name=label.replace(" ", "-"), backend="llamacpp", model=str(path), options=options
            )
            counts = tally(_answers(dataset, called + none, variant), called, none)
            print(f"{label}: {counts} (of {len(called)} due a call, {len(none)} due none)", flush=True)


if __name__ == "__main__":
    main()
