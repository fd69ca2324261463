#!/usr/bin/env bash
# Install quantgate into ./.venv: `bash scripts/install.sh` for the tool, `bash scripts/install.sh test`
# for the tool and its test extra (every optional extra with it); `bash scripts/install.sh serve` adds the
# serve extra, and so on (pyproject.toml lists them). The README's two commands and .ci/run call this script.
#
# llama-cpp-python compiles llama.cpp for this machine's CPU (-march=native). On a CPU that
# advertises Intel AMX, llama.cpp then uses AMX tile instructions, which trap (SIGILL) where the
# virtual machine or kernel does not let a process use them: seen here with every quantized
# variant. So where /proc/cpuinfo lists amx_tile, AMX is left out of the build (AVX-512 and the
# rest stay). Set QUANTGATE_KEEP_AMX=1 to build with it; CMAKE_ARGS given by you are kept too.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
if [[ -z "${CMAKE_ARGS:-}" && -z "${QUANTGATE_KEEP_AMX:-}" ]] && grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  export CMAKE_ARGS="-DCMAKE_C_FLAGS=\"$no_amx\" -DCMAKE_CXX_FLAGS=\"$no_amx\""
  echo "scripts/install.sh: this CPU advertises AMX; building llama.cpp without it (CMAKE_ARGS=$CMAKE_ARGS)"
fi
[[ -d .venv ]] || python3 -m venv .venv
. .venv/bin/activate
# The report extra always: `quantgate run` ends by writing the HTML report. `test` brings every extra.
pip install -e ".[report${extra:+,$extra}]"
