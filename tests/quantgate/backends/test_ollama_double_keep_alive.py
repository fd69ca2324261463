"""The Ollama TEST DOUBLE reads `keep_alive` as Ollama's FAQ says (no model needed; the double's
behaviour with a model is in test_ollama_double.py)."""

from __future__ import annotations

import pytest

from tests.ollama_double.models import keep_alive_s


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, 300.0), ("10m", 600.0), ("24h", 86400.0), ("1h30m", 5400.0), (3600, 3600.0), ("0", 0.0),
     (0, 0.0), (-1, None), ("-1m", None), ("2.5s", 2.5), ("300ms", 0.3)],
)  # fmt: skip
def test_keep_alive_is_read_as_the_faq_says(value, seconds):
    assert keep_alive_s(value) == seconds
