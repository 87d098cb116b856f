#!/bin/sh
# Runs once, when the PostgreSQL volume is first initialised: one login role per system, so that
# Temporal and replyflow cannot read or drop each other's data, and for replyflow two: `replyflow_admin`
# owns its database and tables (the `replyflow-setup` job migrates with it; operators' accounts are
# managed with it) and `replyflow`, which receivers and workers use, owns nothing, so it can neither
# drop the audit log's triggers nor get past the privileges setup gives it (docs/deploy.md,
# "Database roles"). Temporal's role may create its own databases (temporal, temporal_visibility).
set -eu
: "${TEMPORAL_DB_PASSWORD:?set TEMPORAL_DB_PASSWORD}"
: "${REPLYFLOW_DB_PASSWORD:?set REPLYFLOW_DB_PASSWORD}"
: "${REPLYFLOW_ADMIN_DB_PASSWORD:?set REPLYFLOW_ADMIN_DB_PASSWORD}"

# Passwords travel as psql variables (:'name' quotes them), never spliced into the SQL text.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "${POSTGRES_DB:-$POSTGRES_USER}" \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" \
  -v replyflow_password="$REPLYFLOW_DB_PASSWORD" \
  -v replyflow_admin_password="$REPLYFLOW_ADMIN_DB_PASSWORD" <<'SQL'
CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
CREATE ROLE replyflow_admin LOGIN PASSWORD :'replyflow_admin_password';
CREATE ROLE replyflow LOGIN PASSWORD :'replyflow_password';
CREATE DATABASE replyflow OWNER replyflow_admin;
-- Only replyflow's two roles connect, and none creates temporary tables.
REVOKE ALL ON DATABASE replyflow FROM PUBLIC;
GRANT CONNECT ON DATABASE replyflow TO replyflow;
\connect replyflow
-- As the superuser, so the admin role needs no more than ownership (migration 010 uses its hmac()).
CREATE EXTENSION IF NOT EXISTS pgcrypto;
ALTER SCHEMA public OWNER TO replyflow_admin;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO replyflow;
SQL
