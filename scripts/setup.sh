#!/usr/bin/env bash
# Create ./.venv with pipebench, TensorFlow (CPU) and the test tools; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3.12 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python=$candidate; break; fi
  done
fi
[ -n "$python" ] || { echo "setup: no python3 found (pipebench needs Python 3.10-3.12)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  rm -rf .venv
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$python" -m venv .venv
    else
      echo "setup: '$python -m venv' failed; install your distribution's python3-venv package" >&2
      exit 1
    fi
  fi
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[tf,test]"
echo "setup: .venv ready ($(.venv/bin/python --version), $(.venv/bin/python -c 'import importlib.metadata as m; print("tensorflow-cpu", m.version("tensorflow-cpu"))'))"
