#!/usr/bin/env bash
# Create .venv with a Python >= 3.12, install agentstats with its dev extras, register the `python3` kernel.
# Idempotent: reinstalls only when pyproject.toml changed. Set PYTHON=/path/to/python3.12 to choose the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local cands=()
  [ -n "${PYTHON:-}" ] && cands+=("$PYTHON")
  # 3.12 first: the version the stack is tested on (PyMC 6, ArviZ 1.x, nutpie, numpyro wheels); then newer ones.
  cands+=(python3.12 python3.13 python3 python)
  if command -v pyenv >/dev/null 2>&1; then
    local root; root=$(pyenv root)
    for p in $(ls -d "$root"/versions/3.12*/bin/python3 2>/dev/null | sort -rV) \
             $(ls -d "$root"/versions/3.1[3-9]*/bin/python3 2>/dev/null | sort -V); do cands+=("$p"); done
  fi
  for p in /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9] /opt/homebrew/bin/python3.1[2-9]; do
    [ -x "$p" ] && cands+=("$p")
  done
  for c in "${cands[@]}"; do
    if command -v "$c" >/dev/null 2>&1 && ok "$c"; then command -v "$c"; return 0; fi
  done
  return 1
}

if [ ! -x .venv/bin/python ] || ! ok .venv/bin/python; then
  if ! PY=$(find_python); then
    cat >&2 <<'MSG'
agentstats needs Python >= 3.12 (PyMC 6 and ArviZ 1.x require it), and none was found.
Install one, e.g.:  pyenv install 3.12  |  apt-get install python3.12 python3.12-venv  |  brew install python@3.12
or point to it:      PYTHON=/path/to/python3.12 make test
MSG
    exit 1
  fi
  echo "[agentstats] creating .venv with $PY ($("$PY" --version 2>&1))"
  rm -rf .venv
  "$PY" -m venv .venv
fi

stamp=.venv/.agentstats-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[agentstats] installing agentstats[dev] into .venv (first time takes a few minutes)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  # papermill and nbval run notebooks on the kernel named `python3`: register it inside the venv so it is this
  # interpreter, whatever kernels the machine has elsewhere.
  .venv/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (agentstats)" >/dev/null
  echo "$want" > "$stamp"
fi
