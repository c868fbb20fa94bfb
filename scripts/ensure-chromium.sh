#!/usr/bin/env bash
# Install Debian's chromium for the report's browser test when it is missing (idempotent; needs root or sudo).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "ensure-chromium: chromium is missing and this user cannot install packages (no root, no sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium
command -v chromium >/dev/null
