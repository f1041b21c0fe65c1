#!/usr/bin/env bash
# Installs the PostgreSQL, PgBouncer and Redis server binaries the tests start, Chromium and its driver for
# the admin's browser test, when they are missing, and any commands named as arguments.
set -euo pipefail

missing=()
if ! command -v pg_ctl >/dev/null && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  missing+=(postgresql)
fi
command -v redis-server >/dev/null || missing+=(redis-server)
# make test runs a slice through PgBouncer in transaction mode (tests/servers.pgbouncer).
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null || missing+=(pgbouncer)
# tests/e2e/test_admin_browser.py drives these two (at /usr/bin, where Debian puts them).
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
for tool in "$@"; do  # more commands, each from the Debian package of its name (make bench: wrk)
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "Missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]})." >&2
    exit 1
  fi
fi
echo "Installing ${missing[*]} from Debian's packages"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian packages start their own servers; the tests start theirs on free ports.
$sudo service redis-server stop >/dev/null 2>&1 || true
$sudo service postgresql stop >/dev/null 2>&1 || true
$sudo service pgbouncer stop >/dev/null 2>&1 || true
