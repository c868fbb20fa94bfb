#!/usr/bin/env bash
# Set up both environments; lint (ruff, then the import layers); run every test with the latest TensorFlow, then
# with TF 2.14 the tests whose answer depends on the TensorFlow version (`-m tf214`: the builder's and the model's
# TF APIs, PipeModeDataset, the private tf.data walk, the exported input_fn and the SageMaker entry point; a test
# that touches no TensorFlow, or only through them, gives the same answer in both); build the docs.  One pytest at a
# time (beside each other the whole run took 29 min, 2026-11-27; not yet the default).
set -euo pipefail
cd "$(dirname "$0")/.."
export TF_CPP_MIN_LOG_LEVEL=2
./scripts/ensure-chromium.sh || echo "test: chromium could not be installed; the browser test says why" >&2
./scripts/ensure-postgres.sh || echo "test: postgresql could not be installed; the storage test says why" >&2
./scripts/ensure-tmux.sh || echo "test: tmux could not be installed; the progress display's terminal test says why" >&2
./scripts/setup.sh latest
tf214=0
./scripts/setup.sh tf214 || tf214=$?
if [ "$tf214" != 0 ] && [ "$tf214" != 3 ]; then
  exit "$tf214"
fi
.venv/bin/python -m ruff check .
# The package layers (pyproject.toml [tool.importlinter]; docs/development/architecture.md, "Layers").
.venv/bin/lint-imports
.venv/bin/python -m pytest "$@"
if [ "$tf214" = 0 ]; then
  .venv-tf214/bin/python -m pytest -m tf214 "$@"
else
  echo "test: TF 2.14 environment not tested: no Python 3.10 on this machine" >&2
fi
# A stale generated page, a broken link or a missing page fails here (site/ is ignored by git). Not --quiet: it
# hides the warnings --strict counts. NO_MKDOCS_2_WARNING silences Material's end-of-life banner.
.venv/bin/python -m pipebench.docs --check
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site
