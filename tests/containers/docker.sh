#!/usr/bin/env bash
# `docker` for the guide's container blocks (tests/containers/test_guide.py): podman, with the
# flags this machine needs (tests/containers/podman.py fills the three lists in). `docker
# compose` is podman-compose, but for `exec`, which runs `podman exec` on the service's container
# (podman-compose prints its own commands on the output a block may redirect to a file). A
# `docker run`'s published port is published on 127.0.0.1 only.
set -euo pipefail
GLOBAL=()
RUN=()
BUILD=()

if [ "${1:-}" = compose ]; then
  shift
  files=()
  while [ "${1:-}" = -f ]; do
    files+=(-f "$2")
    shift 2
  done
  if [ "${1:-}" = exec ]; then
    shift
    if [ "${1:-}" = -T ]; then shift; fi
    service=$1
    shift
    file=${files[1]:-compose.yaml}
    # podman-compose's project: the compose file's folder, as it spells it.
    project=$(basename "$(cd "$(dirname "$file")" && pwd)" | tr 'A-Z' 'a-z' | tr -cd -- '-_a-z0-9')
    exec podman "${GLOBAL[@]}" exec -i "${project}_${service}_1" "$@"
  fi
  compose=(podman-compose)
  if [ ${#GLOBAL[@]} -gt 0 ]; then compose+=("--podman-args=${GLOBAL[*]}"); fi
  if [ ${#RUN[@]} -gt 0 ]; then compose+=("--podman-run-args=${RUN[*]}"); fi
  compose+=("--podman-build-args=${BUILD[*]}")
  exec "${compose[@]}" "${files[@]}" "$@"
fi

case "${1:-}" in
  run)
    shift
    args=()
    for arg in "$@"; do
      if [[ $arg =~ ^[0-9]+:[0-9]+$ ]]; then arg="127.0.0.1:$arg"; fi
      args+=("$arg")
    done
    exec podman "${GLOBAL[@]}" run "${RUN[@]}" "${args[@]}"
    ;;
  build)
    shift
    exec podman "${GLOBAL[@]}" build "${BUILD[@]}" "$@"
    ;;
  *)
    exec podman "${GLOBAL[@]}" "$@"
    ;;
esac
