// Upload tokens: the credential inside a signed-in upload's ready shell command, good for that one upload's bytes.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { SECRET_PREFIXES } from '../../core/ids.js'
import { STORAGE_UPLOAD_TOKEN_MS } from '../../core/limits.js'
import { issuerOf, type Issuer, type Principal } from '../../core/principal.js'
import { readToken, signToken } from '../../core/signed.js'

interface UploadClaims {
  websiteId: string
  orgId: string
  uploadId: string
  by: Issuer
}

/** The 401 of an upload token that cannot be used; the message says why and what to do. */
export const unusableUploadToken = (why: string) =>
  new ApiError(
    'unauthorized',
    `${why}; for shared files call begin_object_upload (or resume_object_upload) again for a fresh command; for a deploy's large files get a new ticket from begin_deploy and deploy again (what arrived is not sent twice)`,
    { reason: 'upload_token_invalid' },
  )

/**
 * An agent runs `begin_object_upload`'s commands in a shell, which holds no API key and no OAuth
 * token; each command carries a `wu_` token instead (in a header, never in the URL). It is signed
 * (core/signed.ts), names one upload of one website, works only for that upload's byte PUTs, and ends
 * with the upload's idle limit (an hour). It acts as whoever began the upload, with their role, on
 * that one website. Not single-use: a dropped PUT may be sent again.
 */
export class UploadTokens {
  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
  ) {}

  issue(principal: Principal, upload: { websiteId: string; orgId: string; id: string }): string {
    const claims: UploadClaims = {
      websiteId: upload.websiteId,
      orgId: upload.orgId,
      uploadId: upload.id,
      by: issuerOf(principal),
    }
    return signToken(this.key, SECRET_PREFIXES.uploadToken, claims, this.clock.now() + STORAGE_UPLOAD_TOKEN_MS)
  }

  /**
   * Who a token was issued by, for a PUT of `uploadId`'s bytes on `websiteId`, or 401. Whether they may
   * still upload there is the caller's check (actors/identity/auth.ts `signedBy`), at every use.
   */
  issuer(token: string, websiteId: string, uploadId: string): { by: Issuer; orgId: string; websiteId: string } {
    const read = readToken<UploadClaims>(this.key, SECRET_PREFIXES.uploadToken, token, this.clock.now(), STORAGE_UPLOAD_TOKEN_MS)
    if (!read.ok)
      throw unusableUploadToken(
        read.why === 'expired'
          ? 'This upload token expired (they last an hour)'
          : read.why === 'forged'
            ? 'This upload token was not issued here'
            : read.why === 'too-long'
              ? 'This upload token claims to live longer than the hour upload tokens are issued for: it was not issued here'
              : 'Not an upload token (wu_…)',
      )
    const { claims } = read
    if (claims.websiteId !== websiteId || claims.uploadId !== uploadId)
      throw unusableUploadToken(`This upload token is for upload ${claims.uploadId}`)
    return { by: claims.by, orgId: claims.orgId, websiteId: claims.websiteId }
  }
}
