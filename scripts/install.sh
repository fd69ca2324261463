#!/usr/bin/env bash
# Install quantgate into ./.venv: `bash scripts/install.sh` for the tool, `bash scripts/install.sh test`
# for the tool and its test extra (every optional extra with it); `bash scripts/install.sh serve` adds the
# serve extra, and so on (pyproject.toml lists them). The README's two commands and .ci/run call this script.
#
# llama-cpp-python compiles llama.cpp for this machine's CPU, without Intel AMX where the CPU advertises
# it (its instructions trap in virtual machines that do not enable them): scripts/llama-cmake-args.sh
# says why and how to keep it. With the test extra, llama.cpp's own tools (llama-quantize,
# llama-imatrix, llama-perplexity, llama-server) are built too, with the same flags, from the
# llama.cpp sources of the installed llama-cpp-python (scripts/install-llama-tools.sh; cached, so
# once per bindings version); the tests that need them skip, saying why, where the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
. scripts/llama-cmake-args.sh
llama_cmake_args scripts/install.sh
[[ -d .venv ]] || python3 -m venv .venv
. .venv/bin/activate
# The report extra always: `quantgate run` ends by writing the HTML report. `test` brings every extra.
pip install -e ".[report${extra:+,$extra}]"
if [[ ",$extra," == *,test,* ]]; then
  # BFCL's own data and AST checker, which tests/evaluators/test_bfcl_checker.py scores against; without
  # its dependencies (model clients, not needed for the checker: the test stubs the one module it needs)
  pip install --no-deps "bfcl-eval==2026.3.23"
  bash scripts/install-llama-tools.sh \
    || echo "scripts/install.sh: llama.cpp's tools not built (above: why); the tests that need them will skip"
fi
