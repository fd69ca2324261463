"""What a variants file or shorthand in a request may lead to: environment variables only those the
operator allowed (`api_key_env`), paths only inside the roots (`options.model_file` too), an entry
read as one thing only (`ollama:x.toml` is a tag, never a file), and a name that breaks the name
rule answered with 422, never a 500."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.backends import BackendOptions, open_variant, registered_backend
from quantgate.inputs._variants import load_variants_file
from quantgate.serve import JobQueue, create_app
from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf
from tests.quantgate.serve.api_client import FAKE, LOCAL, until

SECRET = "root:$6$hash:19000:0:99999:7:::\n"


def _openai_file(root: Path, key_env: str) -> str:
    (root / "keys.toml").write_text(
        '[[variants]]\nname = "a"\nbackend = "openai"\nmodel = "m"\n'
        f'options = {{ base_url = "http://127.0.0.1:9/v1", api_key_env = "{key_env}" }}\n'
    )
    return "keys.toml"


def _model_file(root: Path, model_file: str) -> str:
    (root / "served.toml").write_text(
        '[[variants]]\nname = "a"\nbackend = "ollama"\nmodel = "a"\n'
        f'options = {{ model_file = "{model_file}" }}\n'
    )
    return "served.toml"


def _answer(client: TestClient, variants: list[str]) -> tuple[int, str]:
    answer = client.post("/runs", json={"dataset": "ok", "variants": variants})
    detail = answer.json().get("detail")
    return answer.status_code, detail if isinstance(detail, str) else str(answer.json())


@pytest.mark.parametrize("key_env", ["FAKE_SECRET", "QUANTGATE_TOKEN", "PATH"])
def test_api_key_env_may_name_only_a_variable_the_operator_allowed(
    client: TestClient, root: Path, key_env: str
) -> None:
    status, detail = _answer(client, [_openai_file(root, key_env)])
    assert (status, detail) == (
        422,
        f"variant a: api_key_env {key_env!r} is not a variable this server lets runs read "
        "(its operator allows one with `quantgate serve --allow-env NAME`)",
    )
    assert client.get("/runs").json() == []


def test_an_allowed_api_key_env_is_taken(root: Path, tmp_path: Path) -> None:
    queue = JobQueue(tmp_path / "runs", command=FAKE, allow_env=["FAKE_SECRET"])
    app = create_app(roots=[root], out=tmp_path / "runs", queue=queue)
    with TestClient(app, base_url=LOCAL) as plain:
        assert _answer(plain, [_openai_file(root, "FAKE_SECRET")])[0] == 202
        assert _answer(plain, [_openai_file(root, "OTHER")])[0] == 422


def test_options_model_file_must_be_inside_the_roots(client: TestClient, root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    outside = "variant 1 of 'served.toml': options.model_file {!r} is outside the server's roots"
    for path in (str(secret), str(tmp_path / "missing"), "~/../../etc/passwd", "../shadow"):
        status, detail = _answer(client, [_model_file(root, path)])
        assert (status, detail) == (403, outside.format(path)), path  # the same for a missing file
    (root / "link").symlink_to(secret)
    assert _answer(client, [_model_file(root, str(root / "link"))])[0] == 403
    assert _answer(client, [_model_file(root, str(root / "missing.gguf"))]) == (
        422,
        f"variant 1 of 'served.toml': options.model_file '{root / 'missing.gguf'}': "
        "no such file or directory",
    )
    assert client.get("/runs").json() == []


def test_a_model_file_inside_the_roots_goes_to_the_run_resolved_and_hashed(
    client: TestClient, root: Path
) -> None:
    write_tiny_gguf(root / "tiny.gguf")
    (root / "alias.gguf").symlink_to(root / "tiny.gguf")
    status, _ = _answer(client, [_model_file(root, str(root / "alias.gguf"))])
    assert status == 202
    [job] = client.get("/runs").json()
    until(client, job["id"], "complete")
    arguments = client.get(f"/runs/{job['id']}/summary").json()["arguments"]
    [variant] = load_variants_file(Path(arguments[arguments.index("--variants") + 1])).variants
    assert variant.options["model_file"] == str(root / "tiny.gguf")
    assert (variant.file_size_bytes, variant.sha256 is not None) == (
        (root / "tiny.gguf").stat().st_size,
        True,
    )


def test_a_shorthand_is_never_opened_as_a_variants_file(
    client: TestClient, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the server's working directory, outside the root
    Path("evil.toml").write_text(SECRET)
    (tmp_path / "creds.toml").write_text(SECRET)
    (root / "x.toml").write_text('[[variants]]\nname = "a"\nbackend = "ollama"\nmodel = "a"\n')
    assert _answer(client, ["ollama:evil.toml"])[0] == 202  # an Ollama tag, as `quantgate run` reads it
    status, detail = _answer(client, ["ollama:/../../creds.toml"])
    assert (status, "root:" in detail) == (422, False)
    assert _answer(client, [f"llamacpp:{root}/x.toml"]) == (  # a model, checked as the run opens it
        422,
        f"variant x: model file '{root / 'x.toml'}' is not a complete GGUF file",
    )
    [job] = client.get("/runs").json()
    until(client, job["id"], "complete")
    arguments = client.get(f"/runs/{job['id']}/summary").json()["arguments"]
    [variant] = load_variants_file(Path(arguments[arguments.index("--variants") + 1])).variants
    assert (variant.backend, variant.model) == ("ollama", "evil.toml")


@pytest.mark.parametrize("entry", ["ollama:_x", "ollama:-x", "ollama:é", "llamacpp:ROOT/.gguf"])
def test_a_shorthand_whose_name_breaks_the_name_rule_gets_422(
    client: TestClient, root: Path, entry: str
) -> None:
    write_tiny_gguf(root / ".gguf")
    status, detail = _answer(client, [entry.replace("ROOT", str(root))])
    assert status == 422, detail
    assert "starting with a letter or digit" in detail


def test_a_shorthand_without_a_path_gets_422_without_the_roots(client: TestClient, root: Path) -> None:
    """`llamacpp:` named the server's first root ('no GGUF file at /srv/root') where `quantgate run`
    says the form: the API answers as the run does, naming no path of the server (issue 46)."""
    status, detail = _answer(client, ["llamacpp:"])
    assert status == 422, detail
    assert "expected BACKEND:MODEL" in detail
    assert str(root) not in detail


def test_an_option_its_backend_does_not_take_is_refused_naming_the_key_not_its_value(
    client: TestClient, root: Path
) -> None:
    (root / "misspelt.toml").write_text(
        '[[variants]]\nname = "a"\nbackend = "ollama"\nmodel = "a"\n'
        f"options = {{ num_ctxx = {SECRET!r}, num_ctx = 0 }}\n"
    )
    status, detail = _answer(client, ["misspelt.toml"])
    assert (status, detail) == (
        422,
        "variant a: options.num_ctx, options.num_ctxx: not an option of the ollama backend, or a value it "
        "refuses (`quantgate run` with the file names why)",
    )
    assert client.get("/runs").json() == []


class _TokenOptions(BackendOptions):
    """A toy backend's options: the variable its token is read from, under a key of its own."""

    token_from: str | None = None

    def environment_options(self) -> dict[str, str]:
        return {} if self.token_from is None else {"token_from": self.token_from}


def test_the_variables_a_run_may_read_are_those_the_backends_options_name(root: Path, tmp_path: Path) -> None:
    (root / "toy.toml").write_text(
        '[[variants]]\nname = "t"\nbackend = "tokened"\noptions = { token_from = "FAKE_SECRET" }\n'
    )
    queue = JobQueue(tmp_path / "runs", command=FAKE, allow_env=["ALLOWED"])
    app = create_app(roots=[root], out=tmp_path / "runs", queue=queue)
    with (
        registered_backend("tokened", open_variant, options=_TokenOptions),
        TestClient(app, base_url=LOCAL) as api,
    ):
        assert _answer(api, ["toy.toml"]) == (
            422,
            "variant t: token_from 'FAKE_SECRET' is not a variable this server lets runs read "
            "(its operator allows one with `quantgate serve --allow-env NAME`)",
        )
        (root / "toy.toml").write_text(
            '[[variants]]\nname = "t"\nbackend = "tokened"\noptions = { token_from = "ALLOWED" }\n'
        )
        assert _answer(api, ["toy.toml"])[0] == 202
