#!/usr/bin/env bash
# Build llama.cpp's own tools (llama-quantize, llama-imatrix, llama-perplexity, llama-server) from the
# llama.cpp sources that the installed llama-cpp-python vendors, into the user's cache:
#
#     bash scripts/install-llama-tools.sh               # prints the bin directory on its last line
#     bash scripts/install-llama-tools.sh --print-dir   # only prints it (built or not)
#
# The sources come from llama-cpp-python's sdist (MIT; `pip download --no-binary :all:` of the version
# installed in .venv, its vendor/llama.cpp), so the tools are the llama.cpp the bindings run. They
# are compiled with CMake, Release, static (the bin directory is self-contained), without OpenSSL
# or the server's web UI download, and with the CPU flags scripts/install.sh gives the bindings
# (scripts/llama-cmake-args.sh: no AMX where it traps). The sdist has no git history, so the tools
# print "version: 0 (unknown)"; the bindings' version in the manifest says which llama.cpp they are.
#
# Cached like the bindings' wheel, once per bindings version and flags:
#     ${XDG_CACHE_HOME:-$HOME/.cache}/quantgate/llama-tools/<bindings version>-<flags hash>/bin/
# beside the tools, manifest.json: bindings version, the sdist's sha256, the CMake flags, the build's
# wall time in seconds and each tool's --version output. A second run finds it and does nothing. A
# failed or interrupted build leaves nothing in the cache (it is built in a temporary directory and
# moved into place at the end). quantgate finds the tools there (`quantgate doctor` lists them).
# About 6-7 minutes on 2 cores and 80 MB of download the first time (docs/install.md has the figures).
#
# Overrides: PYTHON (default .venv/bin/python: whose llama-cpp-python), JOBS (default: nproc),
# CMAKE_ARGS (kept, as for the bindings), TMPDIR (where the build happens), LLAMA_CPP_SDIST (a
# llama_cpp_python-<version>.tar.gz already downloaded, used instead of pip download).
set -euo pipefail
cd "$(dirname "$0")/.."
me="install-llama-tools.sh"
TOOLS=(llama-quantize llama-imatrix llama-perplexity llama-server)
PYTHON="${PYTHON:-.venv/bin/python}"
JOBS="${JOBS:-$(nproc)}"

say() { echo "$me: $*"; }
die() { echo "$me: error: $*" >&2; exit 1; }

command -v cmake >/dev/null || die "cmake not found (apt-get install cmake, or pip install cmake)"
[[ -x "$PYTHON" ]] || die "$PYTHON not found; run: bash scripts/install.sh"
version="$("$PYTHON" -c 'from importlib.metadata import version; print(version("llama-cpp-python"))' 2>/dev/null)" \
  || die "llama-cpp-python is not installed for $PYTHON; run: bash scripts/install.sh"

. scripts/llama-cmake-args.sh
llama_cmake_args "$me"
# CMAKE_ARGS is shell-quoted, as llama-cpp-python's build (scikit-build-core) splits it.
mapfile -t user_args < <("$PYTHON" -c 'import os, shlex; [print(a) for a in shlex.split(os.environ.get("CMAKE_ARGS", ""))]')
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "${user_args[@]}")
flags_hash="$(printf '%s\n' "${flags[@]}" | sha256sum | cut -c1-12)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/quantgate/llama-tools"
dest="$root/$version-$flags_hash"
if [[ "${1:-}" == "--print-dir" ]]; then echo "$dest/bin"; exit 0; fi
[[ -z "${1:-}" ]] || die "unknown argument '$1' (usage: bash scripts/install-llama-tools.sh [--print-dir])"

complete() {
  local tool
  [[ -f "$1/bin/manifest.json" ]] || return 1
  for tool in "${TOOLS[@]}"; do [[ -x "$1/bin/$tool" ]] || return 1; done
}

if complete "$dest"; then
  say "llama.cpp tools of llama-cpp-python $version already built in $dest/bin"
  echo "$dest/bin"
  exit 0
fi

mkdir -p "$root" || die "cannot create $root"
work="$(mktemp -d "${TMPDIR:-/tmp}/quantgate-llama-tools.XXXXXX")"
staging="$(mktemp -d "$root/.partial-$version-$flags_hash.XXXXXX")"  # same file system as $dest
trap 'rm -rf "$work" "$staging"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -n "${LLAMA_CPP_SDIST:-}" ]]; then
  sdist="$LLAMA_CPP_SDIST"
  [[ "$(basename "$sdist")" == "llama_cpp_python-$version.tar.gz" ]] \
    || die "LLAMA_CPP_SDIST=$sdist is not llama_cpp_python-$version.tar.gz (the installed bindings' version)"
  say "step 1/4: llama-cpp-python $version's sdist: $sdist"
else
  say "step 1/4: llama-cpp-python $version's sdist (pip download)"
  "$PYTHON" -m pip download --quiet --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$work/sdist" \
    || die "step 1: pip download llama-cpp-python==$version failed (is pypi.org reachable?)"
  sdist="$work/sdist/llama_cpp_python-$version.tar.gz"
fi
[[ -f "$sdist" ]] || die "step 1: $sdist not found"
sdist_sha256="$(sha256sum "$sdist" | cut -d' ' -f1)"
mkdir "$work/src"
tar -xzf "$sdist" -C "$work/src" --strip-components=3 --wildcards '*/vendor/llama.cpp/*' \
  || die "step 2: $sdist has no vendor/llama.cpp"

say "step 2/4: cmake configure (${flags[*]})"
start=$SECONDS
nice -n 10 cmake -S "$work/src" -B "$work/build" "${flags[@]}" >"$work/configure.log" 2>&1 \
  || { tail -n 20 "$work/configure.log" >&2; die "step 2: cmake configure failed (log above)"; }

say "step 3/4: cmake --build, ${TOOLS[*]} ($JOBS jobs, nice 10; several minutes)"
nice -n 10 cmake --build "$work/build" --target "${TOOLS[@]}" -j "$JOBS" >"$work/build.log" 2>&1 \
  || { tail -n 30 "$work/build.log" >&2; die "step 3: the build failed (log above)"; }
build_seconds=$((SECONDS - start))

say "step 4/4: checking the tools and writing the manifest"
mkdir "$staging/bin"
for tool in "${TOOLS[@]}"; do
  cp "$work/build/bin/$tool" "$staging/bin/" || die "step 4: $tool missing after the build"
  # llama-quantize has no --version: it prints its usage and exits 1, which shows it runs.
  "$staging/bin/$tool" --version >"$work/$tool.version" 2>&1 || grep -q '^usage:' "$work/$tool.version" \
    || { tail -n 5 "$work/$tool.version" >&2; die "step 4: '$tool --version' failed (its output above)"; }
done
"$PYTHON" - "$staging/bin/manifest.json" "$version" "$sdist_sha256" "$build_seconds" "$work" "${TOOLS[@]}" -- "${flags[@]}" <<'PY'
import json, sys
path, version, sdist_sha256, seconds, work, *rest = sys.argv[1:]
split = rest.index("--")
tools, flags = rest[:split], rest[split + 1:]


def version_of(tool):
    lines = open(f"{work}/{tool}.version", encoding="utf-8", errors="replace").read().strip().splitlines()
    version = [line for line in lines if line.startswith(("version:", "built with"))]
    return "\n".join(version) or "no --version option (it printed its usage)"


manifest = {
    "format_version": 1,
    "bindings_version": version,
    "sdist_sha256": sdist_sha256,
    "cmake_flags": flags,
    "build_seconds": int(seconds),
    "tools": {t: version_of(t) for t in tools},
}
with open(path, "w", encoding="utf-8") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
PY
rm -rf "$dest"  # an incomplete earlier one (complete() said no)
mv "$staging" "$dest" || die "step 4: cannot move the build to $dest"
say "llama.cpp tools of llama-cpp-python $version built in $dest/bin (${build_seconds}s)"
echo "$dest/bin"
