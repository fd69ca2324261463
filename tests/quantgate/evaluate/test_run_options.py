"""`RunOptions` built from Python refuses the counts the command line refuses, naming the option."""

import pytest

from evaluators.errors import UsageError
from quantgate.evaluate._options import RunOptions


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"max_repairs": -5}, "max-repairs must be 0 or more, got -5"),
        ({"examples": -1}, "examples must be 0 or more, got -1"),
        ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
        ({"concurrency": -3}, "concurrency must be at least 1, got -3"),
        ({"latency_cases": -1}, "latency-cases must be 0 or more, got -1"),
        ({"limit": 0}, "limit must be at least 1, got 0"),
    ],
)
def test_a_count_the_command_line_refuses_is_a_usage_error_naming_it(options, said):
    with pytest.raises(UsageError) as raised:
        RunOptions(**options)
    assert str(raised.value) == said


def test_the_smallest_allowed_counts_are_taken():
    options = RunOptions(max_repairs=0, examples=0, concurrency=1, latency_cases=0)
    assert (options.max_repairs, options.examples, options.concurrency, options.latency_cases) == (0, 0, 1, 0)
