// The seal on an operator decision: proof, made by the codec server for an operator it authenticated,
// of who decided what for which workflow, which hold it answers, and when. Temporal cannot tell a
// workflow who sent an update (its `identity` is free text), so the workflow trusts only this seal,
// which it verifies through an activity (activities/decisions.ts). An HMAC-SHA256 over the claims,
// with a key derived from the payload key, so only the servers that hold that key can make or check one.
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

const VERSION = 'rfs1';

/** What the codec server vouches for. */
export interface SealClaims {
  /** The authenticated operator's name. */
  operator: string;
  /** The credential (token) that authenticated them; a rotated or revoked one no longer counts. */
  credentialId: string;
  /** The one workflow the decision is for. */
  workflowId: string;
  /** The decision (update or signal name) it may be delivered as: an approval is never a reprocess. */
  decision: string;
  /**
   * The hold it answers: `<effect id>:<attempts>` as the workflow's status shows it (`hold`). Once the
   * effect was sent again (or is held again after a resend), a decision about the earlier hold counts
   * for nothing.
   */
  hold: string;
  /** Single use: a second delivery of the same sealed decision is a replay. */
  requestId: string;
  /** Milliseconds since the epoch; the seal expires DECISION_TTL_MS after. */
  issuedAt: number;
  /** SHA-256 of the decision's body (canonical JSON without the seal), so nothing in it can change. */
  bodyDigest: string;
  /** Which payload key the seal key was derived from (key rotation). */
  keyId: string;
}

/** A sealed decision lives this long: enough to cross Temporal, too short to keep a stolen one. */
export const DECISION_TTL_MS = 10 * 60_000;

/**
 * A MAC key derived from a payload key for one purpose (`purpose` names it, with a version): separate
 * from the payload key and from every other purpose's, so no other secret needs managing and a MAC
 * made for one purpose never verifies for another.
 */
export function derivedKey(payloadKey: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', payloadKey, Buffer.alloc(0), `replyflow ${purpose}`, 32));
}

/** Whether a MAC someone presented equals the expected one, compared in constant time. */
export function macMatches(given: Buffer, expected: Buffer): boolean {
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const sealKey = (payloadKey: Buffer) => derivedKey(payloadKey, 'decision seal v1');

/** JSON with keys sorted at every level, so the digest does not depend on how a client ordered them. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The digest of a decision's body: every field but `seal`. */
function bodyDigest(body: Record<string, unknown>): string {
  const { seal: _seal, ...rest } = body;
  return createHash('sha256').update(canonical(rest)).digest('base64url');
}

function mac(key: Buffer, encodedClaims: string): Buffer {
  return createHmac('sha256', key).update(`${VERSION}.${encodedClaims}`).digest();
}

/** Seals `body` for the operator: returns the body with its `seal` field set. */
export function sealDecision(
  body: Record<string, unknown>,
  claims: Omit<SealClaims, 'bodyDigest' | 'keyId'>,
  key: { id: string; payloadKey: Buffer },
): Record<string, unknown> & { seal: string } {
  const full: SealClaims = { ...claims, bodyDigest: bodyDigest(body), keyId: key.id };
  const encoded = Buffer.from(JSON.stringify(full)).toString('base64url');
  const signature = mac(sealKey(key.payloadKey), encoded).toString('base64url');
  return { ...body, seal: `${VERSION}.${encoded}.${signature}` };
}

type OpenedSeal = { ok: true; claims: SealClaims } | { ok: false; reason: string };

/**
 * Checks that `body` carries a seal made with one of `payloadKeys` (by key id) over exactly this
 * body. Says nothing yet about expiry, replay, revocation or roles: the caller checks those.
 */
export function openSeal(body: unknown, payloadKeys: Record<string, Buffer>): OpenedSeal {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return { ok: false, reason: 'payload must be one JSON object' };
  const seal = (body as { seal?: unknown }).seal;
  if (seal === undefined)
    return { ok: false, reason: 'unsealed: decide through the codec server, logged in' };
  const parts = typeof seal === 'string' ? seal.split('.') : [];
  if (parts.length !== 3 || parts[0] !== VERSION)
    return { ok: false, reason: 'forged: not a replyflow seal' };
  const [, encoded, signature] = parts as [string, string, string];
  let claims: SealClaims;
  try {
    claims = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as SealClaims;
  } catch {
    return { ok: false, reason: 'forged: unreadable seal' };
  }
  const payloadKey = typeof claims?.keyId === 'string' ? payloadKeys[claims.keyId] : undefined;
  if (!payloadKey) return { ok: false, reason: 'forged: sealed with an unknown key' };
  const expected = mac(sealKey(payloadKey), encoded);
  const given = Buffer.from(signature, 'base64url');
  if (!macMatches(given, expected)) return { ok: false, reason: 'forged: the seal does not verify' };
  if (claims.bodyDigest !== bodyDigest(body as Record<string, unknown>))
    return { ok: false, reason: 'forged: the decision was changed after it was sealed' };
  return { ok: true, claims };
}
