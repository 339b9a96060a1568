import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const ID_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz'
const ID_RANDOM_CHARS = 20 // ~103 bits

/** Random lowercase alphanumeric text of `length` characters, without modulo bias. */
export function randomToken(length: number, alphabet = ID_ALPHABET): string {
  let out = ''
  const limit = 256 - (256 % alphabet.length)
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length]
      if (out.length === length) break
    }
  }
  return out
}

/** Resource id prefixes (spec: `ws_` for websites; the rest follow the same pattern). */
export type IdPrefix =
  | 'ws'
  | 'org'
  | 'usr'
  | 'key'
  | 'aud'
  | 'inv'
  | 'tr'
  | 'cli'
  | 'grt'
  | 'fb'
  | 'anc'
  | 'sub'
  | 'dom'
  | 'obj'
  | 'upl'
  | 'ast'
  | 'col'
  | 'fld'
  | 'itm'
  | 'pg'
  | 'msg'
  /** One request a site's functions answered (its log lines share it). */
  | 'req'

/** A new random id such as `ws_3k9...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomToken(ID_RANDOM_CHARS)}`
}

/** The counted part of a counted id (36^8: more than two trillion before it repeats). */
const COUNT_CHARS = 8
/** The random part this process's counted ids share. */
const COUNTED_STEM = randomToken(ID_RANDOM_CHARS - COUNT_CHARS)
let counted = 0

/**
 * An id that need only be unique, not unguessable (a function request, whose log lines it groups): the
 * shape of `newId`'s, its random part drawn once per process and the rest counted, so taking one costs
 * no call for randomness on a path that runs per request.
 */
export function countedId(prefix: IdPrefix): string {
  counted = (counted + 1) % 36 ** COUNT_CHARS
  return `${prefix}_${COUNTED_STEM}${counted.toString(36).padStart(COUNT_CHARS, '0')}`
}

/** Bytes of randomness in an API key secret (issue: at least 32). */
export const API_KEY_SECRET_BYTES = 32
export const API_KEY_PREFIX = 'wb_'

/** A new API key secret: `wb_` followed by 32 random bytes in base64url. */
export function newApiKeySecret(): string {
  return newSecret(API_KEY_PREFIX)
}

/**
 * Prefixes of the other secrets: dashboard sessions, OAuth access and refresh tokens and codes,
 * one-time setup and invitation codes, transfer codes (spec: `wt_`). A prefix tells a leaked secret's
 * kind at a glance (and secret scanners can match it); every one is stored only as a hash.
 */
export const SECRET_PREFIXES = {
  session: 'ps_',
  access: 'wo_',
  refresh: 'wr_',
  authorizationCode: 'wz_',
  setup: 'wsu_',
  invitation: 'wi_',
  transfer: 'wt_',
  anonymous: 'wa_',
  claimCode: 'wc_',
  anonymousInvite: 'wv_',
  deployTicket: 'wd_',
  uploadToken: 'wu_',
} as const

/** A new secret: the prefix and 32 random bytes in base64url. */
export function newSecret(prefix: string): string {
  return prefix + randomBytes(API_KEY_SECRET_BYTES).toString('base64url')
}

/**
 * The stored form of a secret. Secrets carry 256 bits of randomness, so a plain SHA-256 is enough
 * (no stretching needed, as for GitHub and Stripe tokens); the secret itself is never stored.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex')
  const b = Buffer.from(storedHash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/** A short, non-secret hint to recognise a key in listings (`wb_AbCd…`). */
export function secretHint(secret: string): string {
  return `${secret.slice(0, 7)}…`
}
