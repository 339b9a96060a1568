import { Type, type Static } from '@sinclair/typebox'
import { Ms } from './records.js'

/**
 * A website's function variable, keyed `[websiteId, name]`: a plain value its functions read as
 * `env.NAME`, or a secret, kept only sealed (AES-256-GCM under a key derived from the installation's
 * secret) and never shown back.
 */
export const FunctionVariableRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  name: Type.String(),
  secret: Type.Boolean(),
  /** A plain variable's value; null for a secret. */
  value: Type.Union([Type.String(), Type.Null()]),
  /** A secret's value, sealed (base64url of nonce, tag, ciphertext); null for a plain variable. */
  sealed: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Ms,
})
export type FunctionVariableRecord = Static<typeof FunctionVariableRecord>

/** One key of a website's key-value store (`env.KV`), keyed `[websiteId, key]`: as Cloudflare KV keeps it. */
export const FunctionKvRecord = Type.Object({
  v: Type.Literal(1),
  /** The value's bytes (at most 1 MiB). */
  value: Type.Unsafe<Uint8Array>({ description: 'bytes' }),
  /** JSON metadata the function gave (at most 1,024 bytes serialized), or null. */
  metadata: Type.Unknown(),
  /** When it expires (seconds since the epoch, as Cloudflare gives it), or null. */
  expiration: Type.Union([Type.Integer(), Type.Null()]),
})
export type FunctionKvRecord = Static<typeof FunctionKvRecord>
