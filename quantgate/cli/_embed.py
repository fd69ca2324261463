"""`quantgate embed`: how quantization changes the embeddings each variant produces, indexed in Qdrant."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import UsageError, require_extra
from quantgate._formatting import terminal_text
from quantgate.cli._common import (
    DEFAULT_DATASET,
    add_executor_flags,
    check_output_dir,
    cli_executor,
    cli_variants,
    positive_int,
)
from quantgate.rundir._embedding_files import DEFAULT_K

if TYPE_CHECKING:
    from quantgate.cli._common import Commands
    from quantgate.rundir._embedding_files import EmbeddingsFile


def _embed(args: argparse.Namespace) -> int:
    require_extra("embed", "quantgate embed")
    from quantgate.backends import capabilities
    from quantgate.embeddings._embedding_run import EmbeddingOptions, run_embeddings
    from quantgate.evaluate._predictions import dump_json
    from quantgate.inputs._corpus import load_corpus
    from quantgate.render._embedding_table import embeddings_table
    from quantgate.rundir._embedding_files import EmbeddingsFile
    from quantgate.rundir._files import EMBEDDINGS_JSON
    from quantgate.rundir._jsonfile import read_model

    out = Path(args.out)
    check_output_dir(out)
    corpus = load_corpus(args.dataset or DEFAULT_DATASET).limited(args.limit)
    variant_set = cli_variants(args.variants)
    unable = [v.name for v in variant_set.variants if not capabilities(v).embeddings]
    if unable:
        raise UsageError(f"these variants' backends cannot produce embeddings: {', '.join(unable)}")
    options = EmbeddingOptions(k=args.k, qdrant_url=args.qdrant_url, progress=not args.json)
    reference = args.reference or variant_set.reference
    with cli_executor(args, progress=not args.json) as executor:
        run_dir = run_embeddings(
            corpus, variant_set.variants, reference=reference, out=out, options=options, executor=executor
        )
    document = read_model(run_dir / EMBEDDINGS_JSON, EmbeddingsFile)
    if args.json:
        print(dump_json({"run_dir": str(run_dir), **document.model_dump(mode="json")}))
    else:
        print(terminal_text(embeddings_table(document), lines=True))
        print(f"\nembeddings.json and the Qdrant store are in {run_dir}")
    return 0 if _all_embedded(document) else 1


def _all_embedded(document: EmbeddingsFile) -> bool:
    skipped = [v.name for v in document.variants if v.status != "ok"]
    if skipped:
        print(
            terminal_text(f"quantgate: {len(skipped)} variant(s) could not embed: {', '.join(skipped)}"),
            file=sys.stderr,
        )
    return not skipped


def add_parser(commands: Commands) -> None:
    """Add `quantgate embed`."""
    embed = commands.add_parser(
        "embed",
        help="compare the embeddings each variant produces against the reference's, indexed in Qdrant",
        description="Embed a corpus with each variant, index the vectors in Qdrant (one collection per "
        "variant), and measure cosine agreement with the reference, neighbour recall@k and, with a "
        "retrieval dataset's relevance labels, recall@k, MRR and nDCG@k.",
    )
    embed.add_argument(
        "--dataset",
        help=f"a retrieval dataset (corpus.jsonl + queries.jsonl) or an extraction dataset, whose case "
        f"texts are embedded; directory or bundled name (default: {DEFAULT_DATASET})",
    )
    embed.add_argument(
        "--variants",
        nargs="+",
        metavar="FILE|SPEC",
        help="variants .toml files and/or llamacpp:PATH.gguf / ollama:TAG (default: the ladder)",
    )
    embed.add_argument(
        "--reference", help="name of the reference variant (default: the file's, else the first)"
    )
    embed.add_argument("--limit", type=positive_int, metavar="N", help="embed only the first N documents")
    embed.add_argument(
        "--k", type=positive_int, default=DEFAULT_K, help=f"neighbours per query (default: {DEFAULT_K})"
    )
    embed.add_argument(
        "--qdrant-url",
        metavar="URL",
        help="index in this Qdrant server (default: a local store in the run directory, RUN_DIR/qdrant)",
    )
    embed.add_argument("--out", default="runs", help="where to create the run directory (default: runs)")
    embed.add_argument("--json", action="store_true", help="print embeddings.json instead of a table")
    add_executor_flags(embed)
    embed.set_defaults(handler=_embed)
