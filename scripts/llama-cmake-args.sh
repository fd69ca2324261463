# Sourced by scripts/install.sh (llama-cpp-python's build) and scripts/install-llama-tools.sh (llama.cpp's
# tools), so that both compile llama.cpp with the same CPU flags:
#
#     . scripts/llama-cmake-args.sh && llama_cmake_args NAME    # NAME prefixes the message it prints
#
# llama.cpp is compiled for this machine's CPU (-march=native). On a CPU that advertises Intel AMX,
# llama.cpp then uses AMX tile instructions, which trap (SIGILL) where the virtual machine or kernel
# does not let a process use them: seen here with every quantized variant. So where /proc/cpuinfo
# lists amx_tile, AMX is left out of the build (AVX-512 and the rest stay), through CMAKE_ARGS, the
# variable llama-cpp-python's build reads (shell-quoted). Set QUANTGATE_KEEP_AMX=1 to build with it;
# CMAKE_ARGS given by you are kept too.
llama_cmake_args() {
  if [[ -z "${CMAKE_ARGS:-}" && -z "${QUANTGATE_KEEP_AMX:-}" ]] && grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
    local no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    export CMAKE_ARGS="-DCMAKE_C_FLAGS=\"$no_amx\" -DCMAKE_CXX_FLAGS=\"$no_amx\""
    echo "$1: this CPU advertises AMX; building llama.cpp without it (CMAKE_ARGS=$CMAKE_ARGS)"
  fi
}
