"""A command whose optional extra is not installed says so in one line, naming the extra and the pip
command (`evaluators.errors.require_extra`), before any work; `quantgate run` without the report extra
keeps its run and decision and says how to write the report later."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evaluators.errors import EXTRAS, MissingExtraError, require_extra
from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.cli._main import EXIT_USAGE, main
from quantgate.rundir._files import DECISION_JSON, REPORT_DIR
from tests.fakes import GOOD, QueuedChatModel, write_tiny_dataset


def _line(feature: str, extra: str, modules: str) -> str:
    return (
        f"quantgate: error: {feature} needs the optional extra '{extra}' ({modules}), which is not "
        f"installed: pip install 'quantgate[{extra}]'\n"
    )


@pytest.mark.parametrize(
    ("argv", "missing", "line"),
    [
        (["serve"], "uvicorn", _line("quantgate serve", "serve", "fastapi, uvicorn")),
        (
            ["embed", "--variants", "ollama:x"],
            "qdrant_client",
            _line("quantgate embed", "embed", "qdrant_client"),
        ),
        (
            ["run", "--embeddings", "--variants", "ollama:x"],
            "qdrant_client",
            _line("--embeddings", "embed", "qdrant_client"),
        ),
        (["report", "RUN"], "matplotlib", _line("quantgate report", "report", "matplotlib, jinja2")),
        (["decide", "RUN", "--mlflow"], "mlflow", _line("--mlflow", "mlflow", "mlflow")),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(
    argv: list[str],
    missing: str,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` raises ImportError
    monkeypatch.chdir(tmp_path)
    argv = [str(tmp_path) if arg == "RUN" else arg for arg in argv]
    if argv[0] in ("serve", "embed", "run"):
        argv += ["--out", str(tmp_path / "out")]
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err == line
    assert not (tmp_path / "out").exists()  # refused before any work


def test_require_extra_passes_when_installed_and_names_the_extra_when_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_extra("serve", "quantgate serve")  # the test extra installs every extra
    monkeypatch.setitem(sys.modules, "jinja2", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'quantgate\[report\]'$") as raised:
        require_extra("report", "the HTML report")
    assert raised.value.extra == "report"
    assert isinstance(raised.value, ImportError)
    assert set(EXTRAS) == {"serve", "embed", "report", "cluster", "mlflow"}


def test_run_without_the_report_extra_keeps_the_run_and_says_how_to_write_the_report(
    tmp_path: Path, register_backend: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    @contextmanager
    def open_fake(variant: Any, schema: dict[str, Any], *, slots: int | None = None) -> Any:
        yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]))

    register_backend("fake-extras", open_fake, capabilities=BackendCapabilities())
    variants = tmp_path / "variants.toml"
    variants.write_text(
        'reference = "ref"\n'
        '[[variants]]\nname = "ref"\nbackend = "fake-extras"\nmodel = "r"\n'
        '[[variants]]\nname = "quant"\nbackend = "fake-extras"\nmodel = "q"\nquantization = "Q4_K_M"\n'
    )
    dataset = write_tiny_dataset(tmp_path / "tiny")
    monkeypatch.setitem(sys.modules, "jinja2", None)
    argv = [
        "run",
        "--dataset",
        str(dataset),
        "--variants",
        str(variants),
        "--all",
        "--out",
        str(tmp_path / "runs"),
    ]
    assert main([*argv, "--no-token-fidelity"]) == 4  # five cases cannot show the candidate safe
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / DECISION_JSON).is_file()
    assert not (run_dir / REPORT_DIR).exists()
    err = capsys.readouterr().err
    assert (
        "quantgate: the HTML report needs the optional extra 'report' (matplotlib, jinja2), which is not "
        f"installed: pip install 'quantgate[report]'; then: quantgate report {run_dir}\n"
    ) in err
    assert "Traceback" not in err
