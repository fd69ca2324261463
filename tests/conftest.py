"""Shared fixtures: the development sets in ../shared/data and the bundled datasets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest
from hypothesis import settings

from quantgate.backends import Backend, BackendCapabilities, RegisteredBackend, registered_backend
from quantgate.inputs._dataset import Dataset, bundled_datasets, bundled_root, load_dataset
from quantgate.inputs._variants import VariantSet
from tests.fakes import write_tiny_dataset

if TYPE_CHECKING:
    from tests.model_fixtures import LlamaCppServerProcess, LlamaServerProcess, OllamaDoubleProcess


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """As root, a test marked `unprivileged` runs in a child without root's file privileges
    (`tests/unprivileged.py`)."""
    from tests.unprivileged import MARKER, file_permissions_bind, run_without_privileges

    if pyfuncitem.get_closest_marker(MARKER) is None or file_permissions_bind():
        return None
    run_without_privileges(pyfuncitem)
    return True


settings.register_profile("quantgate", database=None)  # no example database written into the checkout
settings.load_profile("quantgate")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHARED_SETS = ["e2e-restaurants-dev", "meddocan-es-dev"]


def shared_set(name: str) -> Path:
    """Path of a development set in ../shared/data, skipping the test when it is absent."""
    path = SHARED_DATA / name
    if not (path / "cases.jsonl").is_file():
        pytest.skip(f"{path} is absent: the shared development sets exist only beside the project checkout")
    return path


@pytest.fixture(autouse=True, scope="session")
def _sha256_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Model-file hashes are cached in the session's temporary directory, not the user's cache."""
    from quantgate.inputs._file_hashes import HASH_CACHE_ENV

    os.environ.setdefault(HASH_CACHE_ENV, str(tmp_path_factory.mktemp("hashes") / "sha256.json"))


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_for_children() -> Iterator[None]:
    """The processes the tests start stop on the SIGINT a test sends, even when the suite runs as a
    background job (`tests/quantgate/evaluate/processes.py:ctrl_c_for_children`)."""
    from tests.quantgate.evaluate.processes import ctrl_c_for_children

    with ctrl_c_for_children():
        yield


@pytest.fixture(autouse=True)
def _reference_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's command-line runs keep reference answers in a cache of their own, so that no test
    reads another's (and none writes into the user's cache)."""
    from quantgate.evaluate._cache import REFERENCE_CACHE_ENV

    monkeypatch.setenv(REFERENCE_CACHE_ENV, str(tmp_path_factory.mktemp("reference-cache")))


@pytest.fixture
def sessions() -> Iterator[ExitStack]:
    """Where a test enters its `processes.session`s; whatever of them still runs is killed after."""
    with ExitStack() as stack:
        yield stack


@pytest.fixture
def dataset(tmp_path: Path) -> Dataset:
    """Five invoice cases and one example (`tests/fakes.py:write_tiny_dataset`), loaded."""
    return load_dataset(write_tiny_dataset(tmp_path / "tiny"))


class RegisterBackend(Protocol):
    def __call__(
        self, name: str, backend: Backend, *, capabilities: BackendCapabilities | None = None
    ) -> RegisteredBackend: ...


@pytest.fixture
def register_backend() -> Iterator[RegisterBackend]:
    """`register_backend(name, opener, capabilities=...)` registers a backend for this test; each one
    is removed (or the backend it replaced restored) when the test ends."""
    with ExitStack() as registered:

        def register(
            name: str, backend: Backend, *, capabilities: BackendCapabilities | None = None
        ) -> RegisteredBackend:
            return registered.enter_context(registered_backend(name, backend, capabilities=capabilities))

        yield register


@pytest.fixture(params=bundled_datasets())
def bundled_dataset_dir(request: pytest.FixtureRequest) -> Path:
    return bundled_root() / str(request.param)


@pytest.fixture(scope="session")
def bundled_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Gemma 3 270M Q4_K_M, assembled once from its package (a core dependency) into the
    session ladder's directory: the real model's GGUF on any machine, without llama.cpp."""
    from quantgate.ladder._quantize import default_source

    return default_source(tmp_path_factory.mktemp("ladder"))


@pytest.fixture(scope="session")
def reference_ladder(bundled_gguf: Path) -> VariantSet:
    """The ladder's F16 reference, dequantized once from the bundled file with gguf (no llama.cpp;
    about 15 s on 2 cores), beside it: the session ladder keeps it."""
    from quantgate.ladder._quantize import build_ladder

    return build_ladder(quants=[], out=bundled_gguf.parent, progress=False)[0]


@pytest.fixture(scope="session")
def ladder(reference_ladder: VariantSet) -> VariantSet:
    """The real ladder (F16, Q8_0, Q4_K_M), built once for the whole session."""
    from tests.model_fixtures import build_test_ladder

    return build_test_ladder(Path(reference_ladder.variants[0].model).parent)


@pytest.fixture(scope="session")
def default_ladder(ladder: VariantSet) -> tuple[VariantSet, Path]:
    """The default ladder (F16, Q8_0, Q4_K_M and Q2_K): Q2_K quantized once beside the session
    ladder's files. The variant set and its variants file."""
    from quantgate.ladder._quantize import DEFAULT_QUANTS, build_ladder

    return build_ladder(quants=DEFAULT_QUANTS, out=Path(ladder.variants[0].model).parent, progress=False)


@pytest.fixture(scope="session")
def small_real_run(ladder: VariantSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real run, decided: the F16 reference and Q4_K_M on 3 cases of restaurants,
    token fidelity included; the report and the notebook read it."""
    from quantgate.decide._recommendation import decide
    from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
    from quantgate.inputs._dataset import load_dataset

    variants = VariantSet(
        reference="F16", variants=[v for v in ladder.variants if v.name in ("F16", "Q4_K_M")]
    )
    options = RunOptions(limit=3, out=tmp_path_factory.mktemp("real-run"), progress=False)
    run_dir = run_evaluation(load_dataset("restaurants"), variants, options=options)
    decide(run_dir)
    return run_dir


OLLAMA_TAGS = {"F16": "gemma3:270m-f16", "Q8_0": "gemma3:270m-q8_0", "Q4_K_M": "gemma3:270m-q4_K_M"}


@pytest.fixture(scope="session")
def _ollama_double_process(ladder: VariantSet) -> Iterator[OllamaDoubleProcess]:
    from tests.model_fixtures import OllamaDoubleProcess

    server = OllamaDoubleProcess({OLLAMA_TAGS[v.name]: v.model for v in ladder.variants})
    yield server
    server.stop()


@pytest.fixture
def ollama_double(_ollama_double_process: OllamaDoubleProcess) -> Iterator[OllamaDoubleProcess]:
    """The Ollama-protocol test double serving the ladder's files under Ollama-style tags (one
    process for the session; the faults a test injected are cleared after it)."""
    yield _ollama_double_process
    _ollama_double_process.clear_faults()


@pytest.fixture(scope="session")
def llama_server(ladder: VariantSet) -> Iterator[LlamaCppServerProcess]:
    """llama-cpp-python's real OpenAI-compatible server with the session ladder's Q4_K_M, one
    process for the session (model alias `q4_k_m`, base URL `llama_server.url`, ending in /v1).
    A test that kills or hangs a server starts its own `LlamaCppServerProcess`."""
    from tests.model_fixtures import LlamaCppServerProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    # without it the server ends a streaming answer early as soon as another request arrives
    server = LlamaCppServerProcess(q4.model, "--interrupt_requests", "False")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llamacpp_server(ladder: VariantSet) -> Iterator[LlamaServerProcess]:
    """llama.cpp's own `llama-server` (scripts/install-llama-tools.sh) with the session ladder's
    Q4_K_M: 2048 tokens of context, 2 threads, one slot, /metrics on; one process for the session
    (alias `q4_k_m`, base URL `llamacpp_server.url`, ending in /v1). Skips when the tool is not
    built; fails, with the server's log, when it is built and does not start."""
    from tests.model_fixtures import LlamaServerProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = LlamaServerProcess(q4.model)
    yield server
    server.stop()
