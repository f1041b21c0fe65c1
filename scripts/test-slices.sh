#!/usr/bin/env bash
# make test's run: the whole suite on MAIN_PYTHON, and at the same time the slices that run again
# under other settings, each on another supported Python found here (scripts/pythons.sh), so that
# one run tests every supported Python without running the same suites a third and fourth time:
# the pooled slice (PgBouncer in transaction mode) on the newest other Python, then PYTHONS_SLICE
# (what neither slice runs) there and on any further one; the home slice (SQLite under the home
# server's settings) with PYTHONS_SLICE on the next other Python (the pooled slice's when there
# is one other, MAIN's when there is none); and lint (`make lint`).
#
# All at once, not one after the other: the suite's worker and server tests leave the cores idle
# while they wait (for a redelivery, a restart, a timeout), and the slices fill them. The main
# run, the longest, starts as soon as its venv and the servers are installed (make's $VENV/.dev
# and servers); each slice then too, once its Python's venv is made. The venvs are made at once
# (pip waits on the network and the disk a good part of the time). The main run has two processes
# (pytest-xdist) that take each other's tests when one runs out (worksteal), each slice one; each
# process has its own PostgreSQL, PgBouncer, Redis, ports and database. Every line is prefixed
# with its run's name; the script exits 1 naming each run that failed.
# Usage: POOLED_SLICE="..." HOME_SLICE="..." PYTHONS_SLICE="..." [VENV=.venv] [MAKE=make] \
#   scripts/test-slices.sh MAIN_PYTHON
set -euo pipefail
cd "$(dirname "$0")/.."

main_python=$1
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
main=$(version_of "$main_python")

others=()
for python in $(./scripts/pythons.sh); do
  [ "$(version_of "$python")" = "$main" ] || others+=("$python")
done
pooled_python=${others[0]:-$main_python}
home_python=${others[1]:-$pooled_python}
echo "Main run on Python $main, pooled slice on Python $(version_of "$pooled_python")," \
  "home slice on Python $(version_of "$home_python")"

# Each run's lines, prefixed with its name as they come; its name in FAILED when it fails.
FAILED=$(mktemp)
run() {
  local name=$1
  shift
  local status=0
  "$@" 2>&1 | sed -u "s/^/[$name] /" || status=$?
  [ "$status" = 0 ] || echo "$name" >>"$FAILED"
}

# The pytest of a venv for `python` (.venv-3.X), with the test requirements (the slices need no
# linter), made when missing or older than the requirements (under a lock: two slices may ask
# for one venv at once); MAIN's own venv for MAIN's Python. Nothing, and its name in FAILED, when
# it cannot be made.
pytest_for() {
  local python=$1 version venv
  version=$(version_of "$python")
  if [ "$version" = "$main" ]; then
    echo "$(dirname "$main_python")/pytest"
    return
  fi
  venv=".venv-$version"
  mkdir -p "$venv"
  # Each step chained with &&: errexit does not reach into an `if` condition.
  if ! (
    flock 9 || exit 1
    if [ ! -f "$venv/.dev" ] || [ requirements-test.txt -nt "$venv/.dev" ] \
        || [ requirements.txt -nt "$venv/.dev" ]; then
      echo "Python $version: installing the test requirements in $venv"
      # --no-compile: a run compiles what it imports, a small part of what pip would compile.
      "$python" -m venv "$venv" \
        && "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile \
          -r requirements-test.txt \
        && touch "$venv/.dev"
    fi
  ) 9>"$venv/.lock" 2>&1 | sed -u "s/^/[venv-$version] /" >&2; then
    echo "venv-$version" >>"$FAILED"
    return
  fi
  echo "$venv/bin/pytest"
}

# The main venv and the servers (make's $VENV/.dev and servers targets, pip and apt-get at once)
# while the other Pythons' venvs are made: every run waits for them (prepared).
PREPARED=$(mktemp -u)
trap 'rm -f "$FAILED" "$PREPARED"' EXIT
(
  run prepare "${MAKE:-make}" --no-print-directory -j2 "${VENV:-.venv}/.dev" servers
  touch "$PREPARED"
) &
prepared() {
  until [ -e "$PREPARED" ]; do sleep 1; done
  ! grep -qx prepare "$FAILED"
}

(prepared && run lint "${MAKE:-make}" --no-print-directory lint) &
(prepared && run main "$(pytest_for "$main_python")" -n 2 --dist worksteal --durations=15) &
(
  pooled=$(pytest_for "$pooled_python")
  # shellcheck disable=SC2086  # the slices are lists of paths
  [ -z "$pooled" ] || ! prepared || DATABASE_POOL_MODE=transaction TEST_PGBOUNCER=1 FAST_PATH=false \
    run pooled "$pooled" -p no:cacheprovider -n 1 --reuse-db $POOLED_SLICE
  for python in "${others[@]}"; do
    if [ "$python" = "$home_python" ]; then
      continue # the home slice runs PYTHONS_SLICE there
    fi
    other=$(pytest_for "$python")
    # shellcheck disable=SC2086
    [ -z "$other" ] || ! prepared || run "python$(version_of "$python")" "$other" \
      -p no:cacheprovider -n 1 $PYTHONS_SLICE
  done
) &
(
  home=$(pytest_for "$home_python")
  # shellcheck disable=SC2086
  [ -z "$home" ] || ! prepared || TEST_HOME_SERVER=1 run home "$home" -p no:cacheprovider -n 1 \
    -m "not postgresql" $HOME_SLICE $PYTHONS_SLICE
) &
wait
echo "Other Pythons tested: ${#others[@]}"
if [ -s "$FAILED" ]; then
  echo "Failed: $(tr '\n' ' ' <"$FAILED")"
  exit 1
fi
