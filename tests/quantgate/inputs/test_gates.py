"""Gates from TOML files and command-line values."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.inputs._gates import Gates, GatesError, load_gates


def test_defaults() -> None:
    gates = load_gates()
    assert gates == Gates()
    assert gates.max_accuracy_drop == 0.05
    assert gates.max_memory_mb is None
    assert (gates.min_cases, gates.min_slice_cases) == (30, 20)


def test_file_values_and_overrides_on_top(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text("max_accuracy_drop = 0.03\nmax_memory_mb = 600\nmin_cases = 20\n")
    gates = load_gates(path, overrides={"max_memory_mb": 500.0, "min_format_validity": None})
    assert gates.max_accuracy_drop == 0.03
    assert gates.max_memory_mb == 500.0  # the flag wins
    assert gates.min_format_validity == 0.90  # None means "not given"
    assert gates.min_cases == 20


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_accuracy_drop = 5\n", "max_accuracy_drop: Input should be less than or equal to 1"),
        ("max_acuracy_drop = 0.1\n", "max_acuracy_drop: Extra inputs are not permitted"),
        ("max_accuracy_drop = \n", "not valid TOML"),
        # strict types: `true` was read as 1.0 and switched the gate off; a string was read as a number
        ("max_accuracy_drop = true\n", "max_accuracy_drop: Input should be a valid number"),
        ('max_accuracy_drop = "0.05"\n', "max_accuracy_drop: Input should be a valid number"),
        ("min_cases = 30.0\n", "min_cases: Input should be a valid integer"),
        ("max_memory_mb = inf\n", "max_memory_mb: Input should be a finite number"),
        ("max_p95_latency_s = nan\n", "max_p95_latency_s: Input should be a finite number"),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    with pytest.raises(GatesError) as caught:
        load_gates(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_an_integer_is_taken_for_a_float(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text("max_accuracy_drop = 0\nmax_memory_mb = 600\n")
    gates = load_gates(path)
    assert gates.max_accuracy_drop == 0.0
    assert gates.max_memory_mb == 600.0


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GatesError, match="no such gates file"):
        load_gates(tmp_path / "absent.toml")


def test_a_bad_flag_value_says_it_came_from_the_command_line() -> None:
    with pytest.raises(GatesError, match="command-line"):
        load_gates(overrides={"min_format_validity": 1.5})
