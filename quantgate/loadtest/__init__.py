"""Load tests: the dataset's prompts at named concurrency levels, per variant."""

from quantgate.loadtest._level_specs import LoadLevel, parse_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.loadtest._loadtest_run import run_load_test
from quantgate.render._load_table import render_load

__all__ = [
    "LoadLevel",
    "LoadOptions",
    "parse_levels",
    "render_load",
    "run_load_test",
]
