#!/usr/bin/env bash
# make test's other-Python slices: on each supported Python found here (scripts/pythons.sh) other
# than MAIN's version, a venv of its own (.venv-3.X) and the tests named after MAIN.
# Usage: scripts/test-pythons.sh MAIN_PYTHON TEST_PATH...
set -euo pipefail
cd "$(dirname "$0")/.."

main=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
shift
ran=0
for python in $(./scripts/pythons.sh); do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$version" = "$main" ] && continue
  venv=".venv-$version"
  if [ ! -f "$venv/.dev" ] || [ requirements-dev.txt -nt "$venv/.dev" ] || [ requirements.txt -nt "$venv/.dev" ]; then
    echo "Python $version: installing the test requirements in $venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements-dev.txt
    touch "$venv/.dev"
  fi
  echo "Python $version ($python): $*"
  "$venv/bin/pytest" -p no:cacheprovider -n 2 "$@"  # two processes: the cores this slice would leave idle
  ran=$((ran + 1))
done
echo "Other Pythons tested: $ran"
