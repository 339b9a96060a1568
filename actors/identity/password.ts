import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/**
 * Passwords are stored only as scrypt hashes (node:crypto; RFC 7914), in the form
 * `scrypt$N$r$p$salt$hash`. scrypt runs on libuv's thread pool, never on the serving thread.
 * N = 2^15, r = 8 (32 MiB, about 50-100 ms here): OWASP's recommended minimum is N = 2^17 with
 * r = 8 at p = 1, or an equivalent cost; 2^15 keeps sign-in under a tenth of a second on 2 cores.
 */
const N = 1 << 15
const R = 8
const P = 1
const KEY_BYTES = 32

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, { ...options, maxmem: 128 * options.N! * options.r! * 2 }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  )
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, { N, r: R, p: P })
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

/** A password against a stored hash, in constant time. */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || hash === undefined) return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/** A hash of nothing, verified against when the email is unknown, so a wrong email takes as long as a wrong password. */
export const DECOY_HASH = `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_BYTES).toString('base64url')}`
