// The installation's secret: 32 random bytes that every key the installation signs with derives from,
// kept in a file of its own (never in the database, so never in a backup or in a cluster's log).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** The secret file's name in the data directory when PLINTH_SECRET_FILE does not name another. */
export const SECRET_FILE_NAME = 'installation.key'
/** How many random bytes the secret is (written as 64 hex digits, as `openssl rand -hex 32` prints them). */
export const SECRET_BYTES = 32

/** A secret file that cannot be read as one, or that disagrees with the data directory: the message says what to do. */
export class SecretFileError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SecretFileError'
  }
}

/** The secret a file holds: 64 hex digits (surrounding white space ignored). */
export function readSecretFile(path: string): Buffer {
  let text: string
  try {
    text = readFileSync(path, 'utf8').trim()
  } catch (error) {
    throw new SecretFileError(
      `the installation's secret file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}): give PLINTH_SECRET_FILE a file this user can read`,
    )
  }
  if (!/^[0-9a-f]{64}$/i.test(text))
    throw new SecretFileError(
      `the installation's secret file ${path} does not hold 64 hex digits (it holds ${text.length} characters): it is the file Plinth made on its first start, or one made with \`openssl rand -hex 32\``,
    )
  return Buffer.from(text, 'hex')
}

/** Whether a file's mode lets anyone but its owner read it (the secret should be the owner's alone). */
export function readableByOthers(path: string): boolean {
  return (statSync(path).mode & 0o077) !== 0
}

/** Writes a new secret file, the owner's alone (0600), fsynced and renamed into place; never over an existing one. */
export function writeSecretFile(path: string, secret: Buffer): void {
  if (existsSync(path)) throw new SecretFileError(`${path} exists already; the installation's secret is never written over`)
  const temporary = join(dirname(path), `.${SECRET_FILE_NAME}.${process.pid}`)
  const fd = openSync(temporary, 'w', 0o600)
  try {
    writeSync(fd, `${secret.toString('hex')}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temporary, path)
  const dir = openSync(dirname(path), 'r')
  try {
    fsyncSync(dir)
  } finally {
    closeSync(dir)
  }
}

/** A new secret (32 random bytes). */
export function newSecret(): Buffer {
  return randomBytes(SECRET_BYTES)
}

/** Whether two secrets are the same bytes (in constant time). */
export function sameSecret(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * A key for one purpose, derived from the installation's secret (HMAC-SHA256 of the purpose's name):
 * knowing one purpose's key tells nothing of another's, or of the secret.
 */
export function deriveKey(secret: Buffer, purpose: string): Buffer {
  return createHmac('sha256', secret).update(purpose).digest()
}
