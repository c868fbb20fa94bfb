#!/usr/bin/env bash
# Set up both environments; lint (ruff, then the import layers); run every test with the latest TensorFlow and,
# beside them, with TF 2.14 the tests whose answer depends on the TensorFlow version (`-m tf214`: the builder's and
# the model's TF APIs, PipeModeDataset, the private tf.data walk, the exported input_fn and the SageMaker entry
# point; a test that touches no TensorFlow, or only through them, gives the same answer in both); build the docs.
#
# Fitting CI in 20 minutes on a 2-vCPU machine (docs/development/testing.md, "How CI is meant to fit in 20 minutes";
# it takes 27 now): the system packages and the two environments install at once; the latest environment's tests run
# on two pytest-xdist workers (PIPEBENCH_TEST_WORKERS=0: one process), with the TF 2.14 tests and the docs build
# beside them, their output kept and printed after. The suite is CPU-bound, so what counts is keeping both vCPUs busy
# to the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export TF_CPP_MIN_LOG_LEVEL=2
logs=$(mktemp -d)
# An early exit (a lint error) stops the background jobs before their log folder goes.
trap 'jobs -p | xargs -r kill 2>/dev/null; wait; rm -rf "$logs"' EXIT
(
  ./scripts/ensure-chromium.sh || echo "test: chromium could not be installed; the browser test says why" >&2
  ./scripts/ensure-postgres.sh || echo "test: postgresql could not be installed; the storage test says why" >&2
  ./scripts/ensure-tmux.sh || echo "test: tmux could not be installed; the progress display's terminal test says why" >&2
) &
system=$!
# TF 2.14: its set-up, then its tests, in the background (its tests need none of the system packages). setup.sh
# exits 3 when there is no Python 3.10 here: noted in a file, since pytest's own exit codes include 3.
(
  code=0
  ./scripts/setup.sh tf214 > "$logs/tf214" 2>&1 || code=$?
  if [ "$code" = 3 ]; then
    touch "$logs/no-python3.10"
    exit 0
  elif [ "$code" = 0 ]; then
    .venv-tf214/bin/python -m pytest -m tf214 "$@" >> "$logs/tf214" 2>&1 || code=$?
  fi
  exit "$code"
) &
tf214_run=$!
./scripts/setup.sh latest
.venv/bin/python -m ruff check .
# The package layers (pyproject.toml [tool.importlinter]; docs/development/architecture.md, "Layers").
.venv/bin/lint-imports
wait "$system"

# A stale generated page, a broken link or a missing page fails the docs (site/ is ignored by git). Not --quiet: it
# hides the warnings --strict counts. NO_MKDOCS_2_WARNING silences Material's end-of-life banner.
(
  .venv/bin/python -m pipebench.docs --check
  NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site
) > "$logs/docs" 2>&1 &
docs=$!
workers=${PIPEBENCH_TEST_WORKERS:-2}
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder); fi
latest=0
.venv/bin/python -m pytest "${parallel[@]}" "$@" || latest=$?

tf214=0
wait "$tf214_run" || tf214=$?
echo "== TF 2.14: its set-up, then the tests whose answer depends on the TensorFlow version (-m tf214) =="
cat "$logs/tf214"
if [ -e "$logs/no-python3.10" ]; then
  echo "test: TF 2.14 environment not tested: no Python 3.10 on this machine" >&2
fi
if [ "$tf214" = 5 ]; then tf214=0; fi  # none of the tests asked for is marked tf214
built=0
wait "$docs" || built=$?
echo "== docs: the generated pages are current, and the site builds with --strict =="
cat "$logs/docs"
for code in "$latest" "$tf214" "$built"; do
  if [ "$code" != 0 ]; then exit "$code"; fi
done
