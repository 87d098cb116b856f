-- Rows that claim an operator's decision come only from the decision path, and the database checks it
-- itself, so that whoever holds only the application role's password cannot write one:
--   * a used decision (decision_requests) needs a seal that verifies: an HMAC-SHA256 with the seal key
--     of the payload key it names (src/decision-seal.ts), over claims naming this row's request,
--     operator and workflow;
--   * an accepted decision in the audit log needs the used decision it comes from;
--   * account changes and purges are audited by the admin only (a role that may change operators).
-- The seal keys (derived from the payload keys, never the keys themselves) are registered by whoever
-- holds the admin credential and the payload keys (src/db/seal-keys.ts, `replyflow setup`); the
-- application role can neither read nor write them (src/db/privileges.ts).

-- pgcrypto's hmac(); trusted, so the database's owner may create it (the embedded PostgreSQL ships it).
CREATE EXTENSION IF NOT EXISTS pgcrypto;

-- Filled by the decision path (migration 009 adds it); IF NOT EXISTS keeps this file independent of it.
ALTER TABLE decision_requests ADD COLUMN IF NOT EXISTS seal text;

CREATE TABLE seal_keys (
  key_id         text        PRIMARY KEY,   -- the payload key's id (REPLYFLOW_ENCRYPTION_KEY_ID / _DECRYPTION_KEYS)
  seal_key       bytea       NOT NULL CHECK (octet_length(seal_key) = 32),
  registered_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON seal_keys FROM PUBLIC;

-- base64url without padding, as Node's Buffer writes it; raises on what is not base64.
CREATE FUNCTION replyflow_base64url(encoded text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT decode(rpad(translate(encoded, '-_', '+/'), ((length(encoded) + 3) / 4) * 4, '='), 'base64')
$$;

-- SECURITY DEFINER: it reads seal_keys, which the inserting role cannot. Values from the seal in its
-- messages are cut short: they are the inserter's text.
CREATE FUNCTION decision_requests_verify_seal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  parts   text[];
  claims  jsonb;
  given   bytea;
  key     bytea;
  problem text;
BEGIN
  IF NEW.seal IS NULL THEN
    RAISE EXCEPTION 'decision_requests: request % has no seal: only a decision the codec server sealed can be used',
      left(NEW.request_id, 100) USING ERRCODE = 'check_violation';
  END IF;
  parts := string_to_array(NEW.seal, '.');
  IF cardinality(parts) <> 3 OR parts[1] <> 'rfs1' THEN
    problem := 'not a replyflow seal';
  ELSE
    BEGIN
      claims := convert_from(replyflow_base64url(parts[2]), 'UTF8')::jsonb;
      given := replyflow_base64url(parts[3]);
    EXCEPTION WHEN OTHERS THEN
      problem := 'unreadable claims or MAC';
    END;
    IF problem IS NULL AND jsonb_typeof(claims) IS DISTINCT FROM 'object' THEN
      problem := 'unreadable claims or MAC';
    END IF;
  END IF;
  IF problem IS NULL THEN
    SELECT k.seal_key INTO key FROM seal_keys k WHERE k.key_id = claims->>'keyId';
    IF key IS NULL THEN
      problem := format('key %s is not registered: run `replyflow setup` with that payload key (docs/deploy.md)',
        coalesce(left(claims->>'keyId', 64), '(none)'));
    ELSIF hmac(convert_to('rfs1.' || parts[2], 'UTF8'), key, 'sha256') IS DISTINCT FROM given THEN
      problem := format('the MAC does not match key %s', left(claims->>'keyId', 64));
    END IF;
  END IF;
  IF problem IS NOT NULL THEN
    RAISE EXCEPTION 'decision_requests: the seal does not verify (%)', problem USING ERRCODE = 'check_violation';
  END IF;
  IF claims->>'requestId' IS DISTINCT FROM NEW.request_id
     OR claims->>'operator' IS DISTINCT FROM NEW.operator
     OR claims->>'workflowId' IS DISTINCT FROM NEW.workflow_id THEN
    RAISE EXCEPTION 'decision_requests: the seal is for request %, operator %, workflow %, not for this row''s',
      left(claims->>'requestId', 100), left(claims->>'operator', 64), left(claims->>'workflowId', 200)
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER decision_requests_sealed BEFORE INSERT OR UPDATE ON decision_requests
  FOR EACH ROW EXECUTE FUNCTION decision_requests_verify_seal();

-- SECURITY INVOKER on purpose: has_table_privilege() asks about the role that inserts.
CREATE FUNCTION audit_log_check_claims() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  action text := lower(btrim(NEW.action));
BEGIN
  IF action IN ('mark-sent', 'resend', 'discard', 'approve', 'reprocess') AND NEW.result LIKE 'accepted%'
     AND NOT EXISTS (SELECT 1 FROM decision_requests d
                      WHERE d.request_id = NEW.request_id AND d.operator = NEW.actor
                        AND d.workflow_id = NEW.workflow_id) THEN
    RAISE EXCEPTION 'audit_log: an accepted % by % needs the sealed decision it comes from (no request % used by them for %)',
      left(action, 40), left(NEW.actor, 64), coalesce(left(NEW.request_id, 100), '(none)'),
      left(NEW.workflow_id, 200) USING ERRCODE = 'check_violation';
  END IF;
  IF (action LIKE 'operator%' OR action = 'purge') AND NOT has_table_privilege('operators', 'INSERT') THEN
    RAISE EXCEPTION 'audit_log: % rows are the admin''s (a role that may change operators), not the application role''s',
      left(action, 40) USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER audit_log_claims BEFORE INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_check_claims();

-- Whether seals of a key id verify here, for a worker's start-up warning; says nothing else about the key.
CREATE FUNCTION seal_key_registered(id text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER AS $$
  SELECT EXISTS (SELECT 1 FROM seal_keys WHERE key_id = id)
$$;

-- The seal keys stay the owner's even where default privileges granted new tables to a role at creation
-- (the embedded PostgreSQL's application role); setup grants the rest (src/db/privileges.ts). The
-- functions resolve names in this schema and pgcrypto's, with pg_temp last: a role that may create
-- temporary tables must not shadow decision_requests or seal_keys with its own.
DO $$
DECLARE
  crypto text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                   WHERE e.extname = 'pgcrypto');
  grantee text;
BEGIN
  FOR grantee IN SELECT DISTINCT a.grantee::regrole::text
                   FROM pg_class c, aclexplode(c.relacl) a
                  WHERE c.oid = 'seal_keys'::regclass AND a.grantee NOT IN (0, c.relowner) LOOP
    EXECUTE format('REVOKE ALL ON seal_keys FROM %s', grantee);
  END LOOP;
  ALTER FUNCTION replyflow_base64url(text) SET search_path = pg_catalog, pg_temp;
  EXECUTE format('ALTER FUNCTION decision_requests_verify_seal() SET search_path = %I, %I, pg_temp',
    current_schema(), crypto);
  EXECUTE format('ALTER FUNCTION audit_log_check_claims() SET search_path = %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION seal_key_registered(text) SET search_path = %I, pg_temp', current_schema());
END $$;
