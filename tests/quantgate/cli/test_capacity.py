"""`quantgate capacity`: the sequences a budget fits, counted by hand on a small GGUF, as a table
and as JSON, and its errors (a missing file, not a GGUF, no ladder, bad flags)."""

from __future__ import annotations

import json

import pytest

from quantgate.cli import main
from tests.quantgate.capacity.test_gguf_metadata import write_gemma3_like

GIB = 2**30


def _fixed_and_per_sequence(weights: int, context: int) -> tuple[int, int]:
    """The small model's RSS by hand (baseline 0): per KV cell 6 layers x 2 heads x (16 + 16) x 2 = 768 B."""
    vocabulary = 160 * 2000
    tokenizer_kv = 768 * 512
    outputs = 4 * 2000 * 2  # the tokenizer's sequence and the prefix sequence
    activations = 4 * 512 * (8 * 32 + 4 * 4 * 16 + 3 * 64)
    per_sequence = 768 * context + 4 * 2000 + 4 * 2000  # KV, an output row, a logits row
    return weights + vocabulary + tokenizer_kv + outputs + activations, per_sequence


def test_capacity_by_hand_as_json(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    fixed, per_sequence = _fixed_and_per_sequence(model.stat().st_size, 4096)
    budget = 0.01 * GIB
    expected = int((round(budget) - fixed) // per_sequence)
    assert expected == 2
    argv = ["capacity", "--memory-gib", "0.01", "--context", "4096", "--baseline-mib", "0", "--json"]
    assert main([*argv, "--variants", f"llamacpp:{model}"]) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["sequences"] == expected
    assert found["kv_bytes_per_token"] == 768
    assert found["one_sequence_bytes"] == fixed + per_sequence
    assert found["at_capacity_bytes"] == fixed + 2 * per_sequence
    assert found["note"] == "the model was trained for 1,024 tokens of context"  # 4,096 asked


def test_capacity_table_and_a_budget_too_small(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "0.001", "--context", "4096", "--variants", f"llamacpp:{model}"]
    assert main([*argv, "--baseline-mib", "0"]) == 0
    out = capsys.readouterr().out
    assert "parallel sequences of 4,096 tokens in 0.001 GiB" in out
    row = next(line for line in out.splitlines() if line.startswith("small"))
    assert row.split()[1] == "0"
    assert "one sequence needs" in row
    assert "more than the budget" in row


def test_a_quantized_cache_fits_more(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "0.05", "--context", "4096", "--baseline-mib", "0", "--json"]
    argv += ["--variants", f"llamacpp:{model}"]
    assert main(argv) == 0
    f16 = json.loads(capsys.readouterr().out)[0]
    assert main([*argv, "--kv-cache", "q4_0"]) == 0
    q4 = json.loads(capsys.readouterr().out)[0]
    assert q4["kv_bytes_per_token"] == 6 * 2 * 32 * 18 / 32  # 216
    assert q4["sequences"] > f16["sequences"]


def test_an_unknown_kv_cache_type_exits_2(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "2", "--context", "4096", "--variants", f"llamacpp:{model}"]
    assert main([*argv, "--kv-cache", "q3_k"]) == 2
    assert "unknown KV-cache type 'q3_k'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--memory-gib", "0", "a number of GiB above 0, at most 1048576, got 0"),
        ("--memory-gib", "inf", "a number of GiB above 0, at most 1048576, got inf"),
        ("--memory-gib", "1e308", "a number of GiB above 0, at most 1048576, got 1e308"),
        ("--memory-gib", "nan", "a number of GiB above 0, at most 1048576, got nan"),
        ("--context", "0", "a number of tokens from 1 to 2147483647, got 0"),
        ("--context", "1" + "0" * 30, "a number of tokens from 1 to 2147483647"),
        ("--baseline-mib", "nan", "a number of MiB from 0 to 1073741824, got nan"),
        ("--baseline-mib", "inf", "a number of MiB from 0 to 1073741824, got inf"),
        ("--baseline-mib", "-1", "a number of MiB from 0 to 1073741824, got -1"),
    ],
)
def test_non_finite_and_absurd_numbers_are_usage_errors(tmp_path, capsys, flag, value, message):
    """Once OverflowError and ValueError tracebacks (issue 46): now argparse's own error, exit 2."""
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "2", "--context", "4096", "--variants", f"llamacpp:{model}"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected {message}" in err
    assert "Traceback" not in err
    assert "unexpected error" not in err


def test_missing_file_and_not_a_gguf_exit_2(tmp_path, capsys):
    argv = ["capacity", "--memory-gib", "2", "--context", "4096", "--variants"]
    assert main([*argv, f"llamacpp:{tmp_path / 'absent.gguf'}"]) == 2
    assert f"no GGUF file at {tmp_path / 'absent.gguf'}" in capsys.readouterr().err
    text = tmp_path / "notes.gguf"
    text.write_text("hello", encoding="utf-8")
    assert main([*argv, f"llamacpp:{text}"]) == 2
    assert "variant notes: " in (err := capsys.readouterr().err)
    assert "is not a GGUF file" in err


def test_no_ladder_says_how_to_build_it(tmp_path, monkeypatch, capsys):
    import quantgate.ladder._quantize

    monkeypatch.setattr(quantgate.ladder._quantize, "default_ladder_dir", lambda: tmp_path / "ladder")
    assert main(["capacity", "--memory-gib", "2", "--context", "4096"]) == 2
    err = capsys.readouterr().err
    assert f"no ladder at {tmp_path / 'ladder' / 'variants.toml'}" in err
    assert "quantgate ladder" in err


def test_the_baseline_help_is_the_default():
    from quantgate.capacity._capacity_run import DEFAULT_BASELINE_MIB
    from quantgate.cli._capacity import BASELINE_HELP

    assert BASELINE_HELP == DEFAULT_BASELINE_MIB


def test_a_variants_own_kv_cache_unless_the_flag_says(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    variants = tmp_path / "variants.toml"
    variants.write_text(
        f'[[variants]]\nname = "own"\nbackend = "llamacpp"\nmodel = "{model}"\nkv_cache = "q8_0"\n\n'
        f'[[variants]]\nname = "plain"\nbackend = "llamacpp"\nmodel = "{model}"\n',
        encoding="utf-8",
    )
    argv = ["capacity", "--memory-gib", "2", "--context", "512", "--json", "--variants", str(variants)]
    assert main(argv) == 0
    own, plain = json.loads(capsys.readouterr().out)
    assert (own["kv_cache"], own["kv_bytes_per_token"]) == ("q8_0", 6 * 2 * 32 * 34 / 32)  # 408
    assert (plain["kv_cache"], plain["kv_bytes_per_token"]) == ("f16", 768)
    assert main([*argv, "--type-k", "q4_0"]) == 0
    own, plain = json.loads(capsys.readouterr().out)
    assert own["kv_cache"] == "K q4_0, V q8_0"
    assert plain["kv_bytes_per_token"] == 6 * 2 * (16 * 18 / 32 + 16 * 2)  # 492


def test_a_budget_beyond_llama_cpps_limit_says_so(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "64", "--context", "16", "--json", "--variants", f"llamacpp:{model}"]
    assert main(argv) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["sequences"] == 255
    assert found["note"].startswith("more may fit: 255 is llama.cpp's limit per context")


def test_a_server_variant_gets_no_figure(tmp_path, capsys):
    model = write_gemma3_like(tmp_path / "small.gguf")
    argv = ["capacity", "--memory-gib", "2", "--context", "512", "--json"]
    assert main([*argv, "--variants", f"llamacpp:{model}", "ollama:gemma3:270m"]) == 0
    embedded, served = json.loads(capsys.readouterr().out)
    assert embedded["sequences"] > 0
    assert (served["sequences"], served["kv_bytes_per_token"]) == (None, None)
    assert served["note"] == "not an embedded GGUF: not modelled"
