#!/usr/bin/env bash
# Make sure a PostgreSQL server binary is installed (Debian's `postgresql` package) for the shared-study
# tests, which start their own private server. Idempotent: does nothing when pg_ctl is already there.
set -euo pipefail

if command -v pg_ctl >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-postgres: pg_ctl not found; run as root (or: sudo apt-get install -y postgresql)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
echo "ensure-postgres: installed $(ls /usr/lib/postgresql/*/bin/pg_ctl)"
