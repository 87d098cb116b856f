#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas to the version the SQL tool
# embeds (that of the server it was built with), with Temporal's own temporal-sql-tool and nothing else.
# Runs in temporalio/admin-tools (the compose one-shot) and from `replyflow cluster` (src/cluster/), on
# every start: each step keeps what exists (a database, the version tables, applied versions).
set -eu
: "${POSTGRES_SEEDS:?set POSTGRES_SEEDS}"
: "${POSTGRES_USER:?set POSTGRES_USER}"
: "${SQL_PASSWORD:?set SQL_PASSWORD}"
port=${DB_PORT:-5432}
sql_tool_binary=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}

sql_tool() {
  "$sql_tool_binary" --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$port" "$@"
}

for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  sql_tool --db "$db" create-database
  # Version 0.0 marks an empty database; a schema already past it is left alone.
  sql_tool --db "$db" setup-schema -v 0.0
  sql_tool --db "$db" update-schema --schema-name "postgresql/v12/${pair#*:}"
done
echo "Temporal schema is up to date"
