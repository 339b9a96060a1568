import type { Clock } from '../core/clock.js'
import { ApiError } from '../core/errors.js'
import { API_KEY_PREFIX, hashSecret, secretMatches } from '../core/ids.js'
import type { Principal } from '../core/principal.js'
import type { Store } from '../core/store/store.js'

/**
 * Resolves a bearer secret to a principal from committed state, on every request, so a PATCH,
 * rotate or revoke takes effect on the very next request.
 */
export function authenticateApiKey(store: Store, clock: Clock, authorization: string | undefined): Principal {
  if (authorization === undefined || authorization === '') {
    throw new ApiError('unauthorized', 'Missing API key: send the header Authorization: Bearer <API_KEY>')
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (match === null) throw new ApiError('unauthorized', 'Malformed Authorization header: expected "Bearer <API_KEY>"')
  const secret = match[1]
  if (!secret.startsWith(API_KEY_PREFIX)) {
    throw new ApiError('unauthorized', `Not an API key: API keys start with ${API_KEY_PREFIX}`)
  }
  const keyId = store.keysByHash.get(hashSecret(secret))
  const record = keyId === undefined ? undefined : store.apiKeys.get(keyId)
  if (record === undefined || !secretMatches(secret, record.secretHash)) {
    throw new ApiError('unauthorized', 'Unknown API key: it may have been rotated or revoked; use a current key')
  }
  if (record.revokedAt !== null) throw new ApiError('unauthorized', 'API key revoked; create a new key', { reason: 'key_revoked' })
  if (record.expiresAt !== null && record.expiresAt <= clock.now()) {
    throw new ApiError('unauthorized', `API key expired at ${new Date(record.expiresAt).toISOString()}; create a new key or extend it`, {
      reason: 'key_expired',
    })
  }
  return { kind: 'api_key', id: record.id, name: record.name, orgId: record.orgId, access: record.access }
}
