#!/usr/bin/env bash
# Set up ./.venv and run the main job on the embedded default: synthetic Criteo-like data made on
# the spot, then the quick variant of the DeepFM experiment. Extra arguments go to `pipebench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/pipebench run experiments/deepfm.yaml --quick "$@"
