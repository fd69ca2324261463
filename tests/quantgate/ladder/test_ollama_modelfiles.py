from quantgate.cli._main import main
from quantgate.inputs._variants import Variant, VariantSet, write_variants_file
from quantgate.ladder._ollama_modelfiles import modelfile, ollama_tag


def test_modelfile_serves_the_file_with_the_embedded_prompt_and_greedy_decoding(tmp_path):
    gguf = tmp_path / "gemma-3-270m-Q4_K_M.gguf"
    text = modelfile(gguf)
    assert text.startswith(f"FROM {gguf}\n")
    assert "PARAMETER temperature 0" in text
    assert '{{ else if eq .Role "user" }}Text:\n{{ .Content }}\nJSON:' in text
    assert "{{ if $last }}{{ .Content }}{{ else }}" in text  # a final assistant message stays open
    assert ollama_tag("Q4_K_M") == "gemma3-270m-quantgate:q4_k_m"


def test_cli_writes_one_modelfile_per_ladder_file(tmp_path, capsys):
    variants = VariantSet(
        variants=[
            Variant(name="F16", backend="llamacpp", model=str(tmp_path / "f16.gguf")),
            Variant(name="Q4_K_M", backend="llamacpp", model=str(tmp_path / "q4.gguf")),
            Variant(name="remote", backend="ollama", model="gemma3:12b"),
        ]
    )
    write_variants_file(tmp_path / "v.toml", variants)
    assert main(["ollama", "modelfiles", str(tmp_path / "mf"), "--variants", str(tmp_path / "v.toml")]) == 0
    assert sorted(p.name for p in (tmp_path / "mf").iterdir()) == ["F16.Modelfile", "Q4_K_M.Modelfile"]
    out = capsys.readouterr().out
    assert f"ollama create gemma3-270m-quantgate:q4_k_m -f {tmp_path / 'mf' / 'Q4_K_M.Modelfile'}" in out


def test_doctor_without_ollama_warns_but_passes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    code = main(["doctor", "--ladder", str(tmp_path)])
    out = capsys.readouterr().out
    assert "warn ladder: not built yet" in out
    assert "warn ollama: Ollama server at http://127.0.0.1:9 is not reachable" in out
    assert code == (1 if "FAIL" in out else 0)
