#!/usr/bin/env bash
# make test's second part: the pooled slice (PgBouncer in transaction mode) and the home slice
# (SQLite under the home server's settings), side by side, each on another supported Python
# found here (scripts/pythons.sh), so that one run tests every supported Python without running
# the same suites a third and fourth time: the pooled slice on the newest other one, the home
# slice on the next (or the same when there is one other, or MAIN's when there is none). Then,
# on each other Python, side by side, PYTHONS_SLICE: what neither slice runs. Each runs in two
# processes with its own PostgreSQL, PgBouncer, Redis, ports and database; side by side they fill
# the cores the worker tests leave idle while they wait for a redelivery.
# Usage: POOLED_SLICE="..." HOME_SLICE="..." PYTHONS_SLICE="..." scripts/test-slices.sh MAIN_PYTHON
set -euo pipefail
cd "$(dirname "$0")/.."

main_python=$1
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
main=$(version_of "$main_python")

others=()
for python in $(./scripts/pythons.sh); do
  [ "$(version_of "$python")" = "$main" ] || others+=("$python")
done

# The pytest of a venv for `python` (.venv-3.X), with the test requirements, made when missing
# or older than the requirements; MAIN's own venv for MAIN's Python.
pytest_for() {
  local python=$1 version venv
  version=$(version_of "$python")
  if [ "$version" = "$main" ]; then
    echo "$(dirname "$main_python")/pytest"
    return
  fi
  venv=".venv-$version"
  if [ ! -f "$venv/.dev" ] || [ requirements-dev.txt -nt "$venv/.dev" ] \
      || [ requirements.txt -nt "$venv/.dev" ]; then
    echo "Python $version: installing the test requirements in $venv" >&2
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements-dev.txt >&2
    touch "$venv/.dev"
  fi
  echo "$venv/bin/pytest"
}

pooled_python=${others[0]:-$main_python}
home_python=${others[1]:-$pooled_python}
pooled=$(pytest_for "$pooled_python")
home=$(pytest_for "$home_python")
echo "Pooled slice on Python $(version_of "$pooled_python"), home slice on Python $(version_of "$home_python")"

# Each slice's lines, prefixed with its name as they come; its name in FAILED when it fails.
FAILED=$(mktemp)
trap 'rm -f "$FAILED"' EXIT
run() {
  local name=$1
  shift
  local status=0
  "$@" 2>&1 | sed -u "s/^/[$name] /" || status=$?
  [ "$status" = 0 ] || echo "$name" >>"$FAILED"
}
# shellcheck disable=SC2086  # the slices are lists of paths
DATABASE_POOL_MODE=transaction TEST_PGBOUNCER=1 \
  run pooled "$pooled" -p no:cacheprovider -n 2 --reuse-db $POOLED_SLICE &
# shellcheck disable=SC2086
TEST_HOME_SERVER=1 run home "$home" -p no:cacheprovider -n 2 -m "not postgresql" $HOME_SLICE &
wait
for python in "${others[@]}"; do
  # shellcheck disable=SC2086
  run "python$(version_of "$python")" "$(pytest_for "$python")" -p no:cacheprovider -n 2 \
    $PYTHONS_SLICE &
done
wait
echo "Other Pythons tested: ${#others[@]}"
if [ -s "$FAILED" ]; then
  echo "Failed: $(tr '\n' ' ' <"$FAILED")"
  exit 1
fi
