// Pure rules of anonymous credentials: who may still act, the byte budget, and the errors that say what to do instead.
import type { Clock } from '../../core/clock.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { ANON_BUDGET_BYTES } from '../../core/limits.js'
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'

/** An error that means the saved secret is useless for good (spec: credential reasons). */
export function consumed(): ApiError {
  return new ApiError(
    'gone',
    'This anonymous credential was claimed: its sites now belong to a person’s workspace and the token no longer works. Delete the saved token; a new anonymous site needs a new credential (POST /public/v1/anonymous/credentials).',
    { reason: 'credential_consumed' },
  )
}

export function expired(): ApiError {
  return new ApiError(
    'gone',
    'This anonymous credential expired: its claim deadline passed and its sites were deleted. Delete the saved token and issue a new one (POST /public/v1/anonymous/credentials).',
    { reason: 'credential_expired' },
  )
}

/** The audit actor of an anonymous credential (its entries live in its hidden organization). */
export function anonymousActor(credential: AnonymousCredentialRecord): AuditActorValue {
  return { kind: 'anonymous', id: credential.id, name: null }
}

/** The credential, if it may still act: 410 once claimed or expired. */
export function checkUsable(credential: AnonymousCredentialRecord, clock: Clock): AnonymousCredentialRecord {
  if (credential.state === 'claimed') throw consumed()
  if (credential.state === 'expired' || (credential.claimUntil !== null && clock.now() >= credential.claimUntil)) throw expired()
  return credential
}

/** The storage site's 24 hours are over (410 `edit_window_closed`). */
export function windowClosed(credential: AnonymousCredentialRecord, until: number): ApiError {
  return new ApiError(
    'gone',
    `This storage site's 24 hours ended at ${iso(until)} and its files are deleted; create a new storage site (the byte budget is not renewed), or ${claimHint(credential)}`,
    { reason: 'edit_window_closed' },
  )
}

/** Refuses `bytes` more when they would take the credential past its byte budget (413 `anonymous_storage_limit`). */
export function charge(credential: AnonymousCredentialRecord, bytes: number): void {
  if (credential.bytesUsed + bytes <= ANON_BUDGET_BYTES) return
  throw new ApiError(
    'payload_too_large',
    `This credential has sent ${credential.bytesUsed} of its ${ANON_BUDGET_BYTES} bytes (every version, update and swap counts; deletes do not refund), and this request needs ${bytes} more. Claim the site into an account to keep working on it`,
    {
      reason: 'anonymous_storage_limit',
      limitBytes: ANON_BUDGET_BYTES,
      usedBytes: credential.bytesUsed,
    },
  )
}

/** How the credential's sites can still be kept, for messages. */
export function claimHint(credential: AnonymousCredentialRecord): string {
  return credential.claimUntil === null ? 'claim it' : `a person can claim it until ${iso(credential.claimUntil)}`
}
