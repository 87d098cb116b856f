#!/bin/sh
# Runs once, when the PostgreSQL volume is first initialised: one login role per system, so that
# Temporal and replyflow cannot read or drop each other's data. Temporal's role may create its own
# databases (temporal, temporal_visibility); replyflow's database is created here, owned by its role.
set -eu
: "${TEMPORAL_DB_PASSWORD:?set TEMPORAL_DB_PASSWORD}"
: "${REPLYFLOW_DB_PASSWORD:?set REPLYFLOW_DB_PASSWORD}"

# Passwords travel as psql variables (:'name' quotes them), never spliced into the SQL text.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "${POSTGRES_DB:-$POSTGRES_USER}" \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" \
  -v replyflow_password="$REPLYFLOW_DB_PASSWORD" <<'SQL'
CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
CREATE ROLE replyflow LOGIN PASSWORD :'replyflow_password';
CREATE DATABASE replyflow OWNER replyflow;
SQL
