#!/bin/sh
# One-shot (temporalio/admin-tools): creates Temporal's two PostgreSQL databases and brings their schemas
# to the version this admin-tools image ships, with Temporal's own temporal-sql-tool. Runs again on every
# `docker compose up`: a database or base schema that exists is kept, applied versions are skipped.
set -eu
: "${POSTGRES_SEEDS:?set POSTGRES_SEEDS}"
: "${POSTGRES_USER:?set POSTGRES_USER}"
: "${SQL_PASSWORD:?set SQL_PASSWORD}"
port=${DB_PORT:-5432}
schemas=/etc/temporal/schema/postgresql/v12

sql_tool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$port" "$@"
}
# Prints 1 when the query finds a row.
probe() {
  PGPASSWORD="$SQL_PASSWORD" psql -h "$POSTGRES_SEEDS" -p "$port" -U "$POSTGRES_USER" -d "$1" -tAc "$2"
}

for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  if [ "$(probe postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
    sql_tool --db "$db" create
  fi
  if [ "$(probe "$db" "SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'")" != 1 ]; then
    sql_tool --db "$db" setup-schema -v 0.0
  fi
  sql_tool --db "$db" update-schema -d "$schemas/${pair#*:}/versioned"
done
echo "Temporal schema is up to date"
