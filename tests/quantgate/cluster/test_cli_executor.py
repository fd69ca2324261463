"""The executor flags of `run`, `load` and `embed`, and connection errors, before any run starts."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from quantgate.cli import main
from quantgate.cli._main import EXIT_FAILURE, EXIT_USAGE
from quantgate.rundir._store import load_run
from tests.quantgate.evaluate.slow_backend import write_inputs


@pytest.fixture
def inputs(tmp_path):
    return write_inputs(tmp_path / "inputs", cases=2, delay_s=0.0)


def _run(inputs, tmp_path, *flags: str) -> int:
    dataset, variants = inputs
    return main(["run", "--dataset", str(dataset), "--variants", str(variants), "--limit", "2",
                 "--out", str(tmp_path / "runs"), "--no-report", "--no-token-fidelity", *flags])  # fmt: skip


def test_ray_flags_without_the_ray_executor_are_refused(inputs, tmp_path, capsys):
    assert _run(inputs, tmp_path, "--ray-address", "auto") == EXIT_USAGE
    assert "--ray-address and --ray-retries go with --executor ray" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_address_where_nothing_listens_fails_at_once_naming_it(inputs, tmp_path, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    assert _run(inputs, tmp_path, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}") == EXIT_FAILURE
    err = capsys.readouterr().err
    assert f"no Ray cluster answers at 127.0.0.1:{port} (Connection refused)" in err
    assert f"ray start --head --port={port}" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_address_that_is_not_host_port_is_refused(inputs, tmp_path, capsys):
    assert _run(inputs, tmp_path, "--executor", "ray", "--ray-address", "headnode") == EXIT_FAILURE
    assert "the Ray address 'headnode' is not auto, HOST:PORT or ray://HOST:PORT" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["load", "embed"])
def test_load_and_embed_take_the_executor_flags(command, tmp_path, capsys):  # before any Ray starts
    flags = ["--executor", "ray", "--ray-address", "headnode"]
    assert main([command, "--variants", "ollama:x", "--out", str(tmp_path), *flags]) == EXIT_FAILURE
    assert "the Ray address 'headnode' is not auto, HOST:PORT or ray://HOST:PORT" in capsys.readouterr().err


def test_without_ray_installed_it_says_how_to_install_it(inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert _run(inputs, tmp_path, "--executor", "ray") == EXIT_USAGE
    assert capsys.readouterr().err == (
        "quantgate: error: the Ray executor needs the optional extra 'cluster' (ray), which is not "
        "installed: pip install 'quantgate[cluster]'\n"
    )


@pytest.mark.slow
def test_a_run_on_a_local_ray_started_for_it_has_its_workers_at_normal_priority(inputs, tmp_path, capsys):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'quantgate[cluster]'")
    assert _run(inputs, tmp_path, "--executor", "ray", "--json") == 4  # one variant: keep the reference
    (run_dir,) = (tmp_path / "runs").iterdir()
    (line,) = load_run(run_dir).variants.variants
    assert line.placement is not None
    assert line.placement.executor == "ray"
    assert line.placement.niceness == 0  # not Ray's 15
    assert "RAY_worker_niceness" not in os.environ  # set for the start of Ray only
