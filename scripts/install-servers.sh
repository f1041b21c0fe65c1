#!/usr/bin/env bash
# Installs the PostgreSQL, PgBouncer and Redis server binaries the tests start, Chromium and its driver for
# the admin's browser test, systemd-analyze for the units' test, when they are missing, and any
# commands named as arguments.
#
# It never starts, stops or reconfigures a service of this machine, which may be one that serves:
# the tests start their own servers on free ports, and Debian's packages are kept from starting
# theirs while they install (below).
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
# tests/deploy/test_systemd.py verifies the units in deploy/systemd with it.
command -v systemd-analyze >/dev/null || missing+=(systemd)
for tool in "$@"; do  # more commands, each from the Debian package of its name (make bench: wrk)
  case $tool in
    # oPodSync, which make bench runs beside the service (bench/peers.py): PHP with SQLite, php-fpm.
    php)
      { command -v php >/dev/null && php -m | grep -qx sqlite3 && compgen -G '/usr/sbin/php-fpm*'; } \
        >/dev/null || missing+=(php-cli php-sqlite3 php-fpm)
      ;;
    *) command -v "$tool" >/dev/null || missing+=("$tool") ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "Missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]})." >&2
    exit 1
  fi
fi

# Debian's packages start their services as they install (invoke-rc.d and deb-systemd-invoke ask
# policy-rc.d first): one that answers 101, "action forbidden", keeps them all from starting, for
# the length of this install only. One already in place (a container image's) is the machine's
# own policy and is left as it is. POLICY_RC_D: another path, for tests/deploy.
policy="${POLICY_RC_D:-/usr/sbin/policy-rc.d}"
if [ ! -e "$policy" ]; then
  # set -C: never over a policy that appeared meanwhile.
  $sudo sh -c 'set -C; printf "#!/bin/sh\n# scripts/install-servers.sh, while it installs\nexit 101\n" >"$1" && chmod 755 "$1"' sh "$policy"
  trap '$sudo rm -f "$policy"' EXIT
  trap 'exit 130' INT TERM
fi

echo "Installing ${missing[*]} from Debian's packages"
$sudo apt-get update -qq
# needrestart, where installed, would restart the services using a library the install upgraded.
$sudo env DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
