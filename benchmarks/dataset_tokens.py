"""Tokens a case reads and writes in each bundled extraction dataset: the input of docs/scale.md's table
per dataset (`benchmarks/scale_cost.py` reads the file this writes).

The ladder's Q4_K_M is opened as a run opens it (4 slots, the JSON-schema grammar) for its tokenizer and
the run's prompts; nothing is decoded or timed. For each dataset, over all its cases: the tokens of the
first attempt's prompt after the prefix every case shares (the instructions and examples, read once per
variant), and the tokens of the case's gold record as JSON (a proxy for the answer: the answer a model
writes has the gold record's fields, its values differ). Gemma 3 12B has the same tokenizer (262,144
tokens) as the 270M model.

    python benchmarks/dataset_tokens.py [--out benchmarks/data/dataset-tokens.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from statistics import mean
from typing import Any

from graphs.long_inputs import prompt_messages
from quantgate.backends import EMBEDDED_SLOTS, open_variant
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._greedy import common_prefix
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, load_variants_file

DATASETS = ("restaurants", "contacts-events", "invoices", "tech-config", "long-documents")
"""The bundled datasets of the extraction kind."""
LADDER = Path.home() / ".cache" / "quantgate" / "ladder"
OUT = Path(__file__).resolve().parent / "data" / "dataset-tokens.json"


def count(name: str, variant: Variant) -> dict[str, Any]:
    """Mean tokens a case of the dataset reads after the shared prefix, and its gold record's tokens."""
    dataset = load_dataset(name)
    with open_variant(variant, dataset.schema, slots=EMBEDDED_SLOTS) as opened:
        assert isinstance(opened.chat_model, LlamaCppChatModel)
        llama = opened.chat_model.engine.llama
        context = extraction_context(dataset, opened, RunOptions())
        prompts = [
            llama.tokenize(render_prompt(prompt_messages(context, c.text)[0]).encode()) for c in dataset.cases
        ]
        prefix = min(common_prefix(prompts[0], p) for p in prompts[1:])
        gold = [
            len(
                llama.tokenize(
                    json.dumps(c.expected, ensure_ascii=False).encode(), add_bos=False, special=False
                )
            )
            for c in dataset.cases
            if c.expected is not None
        ]
    return {
        "cases": len(dataset.cases),
        "shared_prefix_tokens": prefix,
        "read_tokens": round(mean(len(p) - prefix for p in prompts), 1),
        "gold_tokens": round(mean(gold), 1) if gold else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    variant = next(v for v in load_variants_file(LADDER / "variants.toml").variants if v.name == "Q4_K_M")
    figures = {
        "date": datetime.date.today().isoformat(),
        "tokenizer": Path(variant.model).name,
        "datasets": {name: count(name, variant) for name in DATASETS},
    }
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
