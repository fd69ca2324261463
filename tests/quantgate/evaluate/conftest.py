"""Fixtures of the evaluate tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest


@pytest.fixture
def sessions() -> Iterator[ExitStack]:
    """Where a test enters its `processes.session`s; whatever of them still runs is killed after."""
    with ExitStack() as stack:
        yield stack
