#!/usr/bin/env bash
# Make sure tmux is installed (Debian's `tmux` package) for the progress display's terminal test, which
# runs pipebench in a detached tmux session and reads its screen. Idempotent: does nothing when tmux is there.
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-tmux: tmux not found; run as root (or: sudo apt-get install -y tmux)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq tmux >/dev/null
echo "ensure-tmux: installed $(tmux -V)"
