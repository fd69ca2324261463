"""`quantgate ollama modelfiles DIR`: a Modelfile per ladder GGUF, to serve them with Ollama."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import MissingInputError

if TYPE_CHECKING:
    from quantgate.cli._common import Commands


def _modelfiles(args: argparse.Namespace) -> int:
    from quantgate.cli._common import check_output_dir
    from quantgate.inputs._variants import load_variants_file
    from quantgate.ladder._ollama_modelfiles import write_modelfiles
    from quantgate.ladder._quantize import VARIANTS_FILE, default_ladder_dir

    check_output_dir(Path(args.dir), "modelfiles DIR")
    variants_file = Path(args.variants) if args.variants else default_ladder_dir() / VARIANTS_FILE
    if not variants_file.is_file():
        raise MissingInputError(f"no variants file at {variants_file}; run: quantgate ladder")
    written = write_modelfiles(load_variants_file(variants_file), Path(args.dir))
    print("Modelfiles written; to serve the exact files quantgate evaluated with Ollama, run:")
    for _, command in written:
        print(f"  {command}")
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate ollama` and its action `modelfiles`."""
    ollama = commands.add_parser("ollama", help="Ollama helpers")
    actions = ollama.add_subparsers(dest="ollama_command", required=True, metavar="ACTION")
    modelfiles = actions.add_parser("modelfiles", help="write a Modelfile per ladder GGUF")
    modelfiles.add_argument("dir", metavar="DIR")
    modelfiles.add_argument("--variants", help="variants file (default: the ladder's)")
    modelfiles.set_defaults(handler=_modelfiles)
