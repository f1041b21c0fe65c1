#!/bin/sh
# The official postgres image's first start, in short: a cluster made from POSTGRES_USER,
# POSTGRES_PASSWORD and POSTGRES_DB when the volume has none, then the server.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  user=${POSTGRES_USER:-postgres}
  database=${POSTGRES_DB:-$user}
  password_file=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
  initdb --username="$user" --pwfile="$password_file" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$password_file"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\" OWNER \"$user\";" |
      postgres --single -j -D "$PGDATA" postgres >/dev/null
  fi
  echo "Made the cluster, with the database $database of $user"
fi
exec "$@"
