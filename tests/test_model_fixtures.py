"""The llama-server fixture's two ways of not running a test: a tool that is not built skips it,
naming the script; a tool that is built and fails to start fails it, with the end of its log."""

import stat
import sys

import pytest

from tests.model_fixtures import LlamaServerProcess

FAILING_SERVER = f"""#!{sys.executable}
import sys
if sys.argv[1:] == ["--version"]:
    print("version: 4242 (fake)", file=sys.stderr)
    sys.exit(0)
print("llama_model_load: error loading model: tensor 'blk.0.attn_q.weight' has wrong shape", file=sys.stderr)
sys.exit(1)
"""


def test_a_llama_server_not_built_skips_naming_the_install_script(tmp_path, monkeypatch):
    monkeypatch.setenv("QUANTGATE_LLAMA_TOOLS", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=r"llama-server is not built .*install-llama-tools\.sh"):
        LlamaServerProcess("model.gguf")


def test_a_llama_server_that_fails_to_start_fails_with_its_log(tmp_path, monkeypatch):
    server = tmp_path / "llama-server"
    server.write_text(FAILING_SERVER)
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("QUANTGATE_LLAMA_TOOLS", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"llama-server exited with 1: .*tensor 'blk\.0\.attn_q\.weight'"):
        LlamaServerProcess("model.gguf")
