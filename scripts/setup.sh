#!/usr/bin/env bash
# Create a virtual environment with pipebench, TensorFlow (CPU), the test tools and (latest) the docs tools; safe to rerun.
#   ./scripts/setup.sh          ./.venv        newest Python 3.10-3.12 here + latest tensorflow-cpu
#   ./scripts/setup.sh tf214    ./.venv-tf214  Python 3.10 + tensorflow-cpu 2.14.1 (scripts/tf214-requirements.txt)
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-latest}
case "$flavour" in
  latest) venv=.venv; candidates="python3.11 python3.12 python3.10 python3"; extras="tf,test,docs,profile"; pins=""
          then="" ;;
  # TF 2.14's profiler tools (the tf.data bottleneck analysis; xprof 2.20+ lack it) go in a second step, resolved
  # against what is installed: resolved with the rest in a fresh environment, pip backtracked for over 30 minutes.
  tf214) venv=.venv-tf214; candidates="python3.10"; extras="test"; pins="-r scripts/tf214-requirements.txt"
         then="tensorboard-plugin-profile==2.19.0" ;;
  *) echo "setup: unknown environment '$flavour' (latest or tf214)" >&2; exit 2 ;;
esac

# A candidate counts only if it runs: pyenv shims exist for versions the current folder does not select.
works() { "$1" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))' >/dev/null 2>&1; }
python=""
if [ -n "${PYTHON:-}" ] && [ "$flavour" = latest ] && works "$PYTHON"; then python=$PYTHON; fi
for candidate in $candidates; do
  [ -z "$python" ] || break
  if works "$candidate"; then python=$candidate; continue; fi
  for found in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${candidate#python}"*/bin/"$candidate"; do
    if [ -x "$found" ] && works "$found"; then python=$found; break; fi
  done
done
[ -n "$python" ] || { echo "setup: none of $candidates runs here (pipebench needs Python 3.10-3.12)" >&2; exit 3; }

if [ ! -x "$venv/bin/python" ]; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$python" -m venv "$venv"
    else
      echo "setup: '$python -m venv' failed; install your distribution's python3-venv package" >&2
      exit 1
    fi
  fi
fi
# A complete environment knows it: the fingerprint of what it was installed from (this script, pyproject.toml, the
# pins, the Python, the extras) is kept in it after a successful install. The same fingerprint, and pipebench
# importing from this checkout, skip pip (a few hundred ms instead of ~90 s); any change reinstalls.
stamp="$venv/.pipebench-setup"
fingerprint=$( { cat scripts/setup.sh pyproject.toml; [ -z "$pins" ] || cat scripts/tf214-requirements.txt;
                 "$venv/bin/python" -c 'import sys; print(sys.version)'; echo "$extras $pins $then"; } |
               sha256sum | cut -d' ' -f1)
here=$(pwd -P)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$fingerprint" ] && "$venv/bin/python" -c "
import os, sys, pipebench
sys.exit(os.path.realpath(pipebench.__file__) != os.path.join('$here', 'pipebench', '__init__.py'))" 2>/dev/null; then
  state="up to date"
else
  rm -f "$stamp"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extras]" $pins
  [ -z "$then" ] || "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$then"
  echo "$fingerprint" > "$stamp"
  state="ready"
fi
echo "setup: $venv $state ($("$venv/bin/python" -c 'import sys, importlib.metadata as m; print(f"Python {sys.version.split()[0]}, tensorflow-cpu", m.version("tensorflow-cpu"))'))"
