/**
 * Signed bearer tokens: `<prefix><base64url JSON claims>.<expiry ms>.<HMAC-SHA256>`. The claims are
 * readable by whoever holds the token (signed, not encrypted); the signature, under a key derived
 * from the installation's, covers the claims and the expiry. Deploy tickets and upload tokens are
 * made of it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

const sign = (key: Buffer, payload: string, expiresAt: number) =>
  createHmac('sha256', key).update(`${payload}.${expiresAt}`).digest('base64url')

/** A token carrying `claims` until `expiresAt`. */
export function signToken(key: Buffer, prefix: string, claims: object, expiresAt: number): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
  return `${prefix}${payload}.${expiresAt}.${sign(key, payload, expiresAt)}`
}

/**
 * A token's claims and expiry, or why it is refused: not one (`malformed`), not signed here (`forged`),
 * `expired`, or claiming to live longer than such tokens are made to (`too-long`: tokens are issued for
 * `lifetimeMs`, so one whose expiry lies further ahead was never issued by this server, whatever its
 * signature says; a key taken from an old backup cannot mint a long-lived one).
 */
export function readToken<T>(
  key: Buffer,
  prefix: string,
  token: string,
  now: number,
  lifetimeMs: number,
): { ok: true; claims: T; expiresAt: number } | { ok: false; why: 'malformed' | 'forged' | 'expired' | 'too-long' } {
  if (!token.startsWith(prefix)) return { ok: false, why: 'malformed' }
  const match = /^([A-Za-z0-9_-]+)\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token.slice(prefix.length))
  if (match === null) return { ok: false, why: 'malformed' }
  const [, payload, expiry, signature] = match
  const expected = Buffer.from(sign(key, payload!, Number(expiry)))
  const given = Buffer.from(signature!)
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, why: 'forged' }
  const expiresAt = Number(expiry)
  if (expiresAt <= now) return { ok: false, why: 'expired' }
  if (expiresAt - now > lifetimeMs) return { ok: false, why: 'too-long' }
  return { ok: true, claims: JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as T, expiresAt }
}
