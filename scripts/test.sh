#!/usr/bin/env bash
# Set up ./.venv and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=2
exec .venv/bin/python -m pytest "$@"
