#!/usr/bin/env bash
# The supported Pythons on this machine, one interpreter path a line, newest first: python3.X on
# the PATH when it runs, else one that pyenv or the system keeps (make test runs a slice of the
# suite on each besides the one its venv has).
set -uo pipefail

for version in 3.13 3.12 3.11; do
  candidates=("$(command -v "python$version" 2>/dev/null)" "/usr/bin/python$version")
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for found in "$root"/versions/"$version".*/bin/python"$version"; do
    candidates+=("$found")
  done
  for candidate in "${candidates[@]}"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c '' >/dev/null 2>&1; then
      "$candidate" -c 'import sys; print(sys.executable)'
      break
    fi
  done
done
