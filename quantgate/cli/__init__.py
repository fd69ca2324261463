"""The `quantgate` command line: one module per command, plus shared helpers."""

from quantgate.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
