/**
 * The closed list of error kinds of the Site Publishing API, with their HTTP statuses, and the one
 * error class every layer throws. The wire shape `{kind, message, details?}` is built only here.
 */

/** One kind of failure: its HTTP status, and what it means to a client. */
export interface ErrorKindEntry {
  status: number
  /** When a client gets it, and what to do (the reference and OpenAPI quote it). */
  when: string
  /**
   * Why a kind beyond the spec's ten exists: the spec answers its status in a case without naming a
   * kind, or HTTP requires it. Absent for the spec's own kinds.
   */
  why?: string
}

/**
 * The one registry of error kinds (spec: Errors). The spec's ten map exactly to their statuses; the
 * five additions say why they exist, and the reference (`GET /docs/api`) documents every entry.
 */
export const ERROR_KINDS = {
  validation: {
    status: 400,
    when: 'The request is malformed: bad JSON, a bad or unknown field (`details.field` names it), or a state the operation cannot start from.',
  },
  unauthorized: {
    status: 401,
    when: 'Missing, unknown, revoked or expired credential (`details.reason` says which); `WWW-Authenticate` says where to authenticate.',
  },
  payment_required: {
    status: 402,
    when: 'The plan has no room (`plan_limit`, with `upgradeUrl`), a held claimed site is read-only (`claim_held`), or shared files need storage room (`storage_limit`).',
  },
  forbidden: {
    status: 403,
    when: "The caller's role lacks the capability in `details.capability`, the site is taken down (`suspended`), or only a person may do this (`user_required`).",
  },
  not_found: {
    status: 404,
    when: "No such route, or nothing with that id in the caller's scope: ids never confirm existence across tenants.",
  },
  method_not_allowed: {
    status: 405,
    when: 'The path exists but not with this method; `Allow` and `details.allowed` list the methods it takes.',
    why: 'RFC 9110 15.5.6 answers a known path with an unknown method 405 with an Allow header; a 404 would tell a client the path does not exist.',
  },
  request_timeout: {
    status: 408,
    when: 'The request body stopped arriving before it was complete; the connection is closed. Send the whole body without pausing (uploads: resume from the stored offset).',
    why: 'RFC 9110 15.5.9: the server stops waiting for a body that stopped arriving, and says so before closing rather than dropping the connection silently.',
  },
  conflict: {
    status: 409,
    when: 'The request conflicts with the current state: a taken slug or subdomain, a stale `expectedHeadVersion` or lease (`Invalid edit lease`), a build running, a website in the trash, a second pending transfer.',
  },
  gone: {
    status: 410,
    when: 'Gone for good: an anonymous edit after the 24-hour window (`edit_window_closed`; the site is still claimable), or a spent anonymous credential (`credential_consumed`, `credential_expired`: delete the saved token).',
    why: 'The spec answers 410 for an anonymous edit after the 24-hour cutoff (`edit_window_closed`) without naming a kind; RFC 9110 15.5.11 410 says the condition is permanent.',
  },
  payload_too_large: {
    status: 413,
    when: "The body is over the operation's limit (`details.limitBytes`), or the anonymous byte budget is spent (`anonymous_storage_limit`).",
  },
  unprocessable: {
    status: 422,
    when: 'What the request names exists but cannot be given as it is: an entry of a shared zip whose bytes are not what the zip says (`archive_entry_invalid`, `details.entry`); the message says where the whole zip is.',
    why: 'RFC 9110 15.5.21: the request is well formed and what it names exists, but its content cannot be served; a visitor asking for an entry of a damaged upload made no bad request (400) and met no server fault (5xx).',
  },
  rate_limited: { status: 429, when: 'The bucket is empty; retry after `Retry-After` seconds.' },
  internal: { status: 500, when: 'An unexpected error; it is logged with its stack and never leaked. Retry later.' },
  upstream: { status: 502, when: 'A service Plinth depends on (Stripe) failed; retry later.' },
  unavailable: {
    status: 503,
    when: 'Not offered to this request now: anonymous publishing is invite-only and the request carries no valid invite code (`invite_only`), the analytics buffer is full (`Retry-After`), or no node of a cluster leads it at the moment (retry in a few seconds; a write whose acknowledgement was lost says its outcome is unknown).',
    why: 'The spec answers 503 when the server is invite-only for the anonymous endpoints (`reason: invite_only`) without naming a kind.',
  },
} as const satisfies Record<string, ErrorKindEntry>

export type ErrorKind = keyof typeof ERROR_KINDS

/** Every error kind and its HTTP status, from the registry. */
export const ERROR_STATUS = Object.fromEntries(Object.entries(ERROR_KINDS).map(([kind, entry]) => [kind, entry.status])) as {
  readonly [K in ErrorKind]: (typeof ERROR_KINDS)[K]['status']
}

/** The closed list of `details.reason` values Plinth answers with, and what each means. */
export const ERROR_REASON_DESCRIPTIONS = {
  plan_limit: 'The plan has no room for another website (spec); `details.upgradeUrl` is where to upgrade.',
  claim_held: 'A claimed website on a plan without room is held offline and read-only until activated (spec).',
  storage_limit:
    'Shared files need room in the organization’s storage quota, or a free link asks for more days than the plan allows (spec).',
  suspended: 'The platform took the site down; nothing can publish it (spec).',
  user_required: 'Only a person (a session or an OAuth token) may do this; API keys cannot (spec).',
  build_failed: 'An anonymous replace whose build failed; the old site is untouched (spec).',
  site_already_created: 'The credential’s website exists; send `replace: true` within its 24 hours (spec).',
  network_limit: 'Too many live anonymous sites on this network; `retryAfterSeconds` says when (spec).',
  edit_window_closed: 'The anonymous 24-hour window closed; the site can still be claimed (spec).',
  anonymous_storage_limit: 'The anonymous byte budget (500 MiB) or the in-progress upload allowance is spent (spec).',
  invite_only: 'Anonymous publishing on this server needs an operator’s invite code in `X-Invite-Code` (spec).',
  credential_consumed: 'The anonymous credential was claimed: delete the saved token (spec).',
  credential_expired: 'The anonymous credential’s claim deadline passed and its sites were purged: delete the saved token (spec).',
  claim_code_invalid: 'The claim code is wrong or expired; create a new one (spec).',
  website_deleted: 'The website is in the trash: restore it first.',
  invalid_json: 'The body is not valid JSON; the message says where it broke.',
  key_revoked: 'The API key was revoked; create a new one.',
  key_expired: 'The API key expired; create a new one or extend it.',
  billing_not_configured: 'Billing operations need the operator’s Stripe settings.',
  origin_not_trusted: 'A session may change things only from the dashboard’s Origin.',
  session_expired: 'The dashboard session ended; sign in again.',
  session_ambiguous:
    'The request carried more than one session cookie (one may have been planted by a site under the same domain); it is treated as signed out.',
  token_expired: 'The OAuth access token expired; refresh it.',
  not_a_member: 'The person of the OAuth token is no longer a member of the organization it was authorized for.',
  wrong_kind: 'The operation needs another website kind (shared files need a storage website).',
  upload_busy: 'A chunk of this upload is being written now; try again once it was answered.',
  offset_mismatch: 'The chunk does not start where the stored bytes end; resume from the offset the resume call answers.',
  upload_incomplete: 'The upload has not received all its bytes yet; send the rest, then finalize.',
  name_taken: 'A file or folder of that name exists already.',
  ticket_invalid:
    'The deploy ticket is missing, malformed, forged, expired or already used, or whoever asked for it may no longer deploy to the website (key revoked or expired, no longer a member, website trashed or suspended); get a new one with begin_deploy.',
  would_revert:
    'The deploy would undo changes made to the site since `baseVersion` (`paths` lists them); merge them, or send `force` with a new ticket.',
  plan_required: 'The feature (passwords) needs a paid plan with billing on; `details.upgradeUrl` is where to upgrade.',
  password_required: 'The site is protected by a password: send it with HTTP Basic auth (any user name), or use the password page.',
  file_too_large: 'A file is over the per-file limit (`details.file`, `details.limit`); nothing was sent.',
  archive_read_only: 'The folder is served from a zip archive: it takes no more files; share them in a new folder.',
  archive_entry_invalid:
    'An entry of a shared zip holds other bytes than the zip says (more or fewer once inflated, or a broken compressed stream): download the whole zip, or zip the folder again and upload it.',
  upload_retries:
    'The same file was begun again too often (5 quickly, then 5 an hour): resume the upload that exists (resume_object_upload) instead of beginning it again.',
  rename_limit:
    'Every rename of the namespace (or of this site’s vanity label) the workspace may make is used (`details.limit`); the names in use stay.',
  mail_limit:
    'The server sends an address, and a workspace, only so many messages an hour and a day (`PLINTH_MAIL_LIMITS`); nothing was sent: try again after `Retry-After` seconds.',
  session_required:
    'Only a person signed in to the dashboard may do this (change their password or email address); an application acting for them, or an API key, cannot.',
  link_expired: 'The one-time link (a password reset, an email confirmation) is unknown, used or past its time: ask for a new one.',
  functions_build_failed:
    'The site’s `functions/` folder (or its `_routes.json`) did not compile: `details.problems` lists each problem with its file and line; nothing was deployed.',
  upload_token_invalid:
    'The upload token in the command is malformed, forged, expired or for another upload, or whoever began the upload may no longer upload there; begin the upload again.',
} as const

/** The closed list of `details.reason` values Plinth answers with. */
export const ERROR_REASONS = Object.keys(ERROR_REASON_DESCRIPTIONS) as (keyof typeof ERROR_REASON_DESCRIPTIONS)[]

export type ErrorReason = keyof typeof ERROR_REASON_DESCRIPTIONS

export interface ErrorDetails {
  reason?: ErrorReason
  [key: string]: unknown
}

/** The wire shape of every failure. */
export interface ErrorBody {
  kind: ErrorKind
  message: string
  details?: ErrorDetails
}

/** A failure the caller can act on. Messages say what to do next: agents read them. */
export class ApiError extends Error {
  readonly kind: ErrorKind
  readonly details: ErrorDetails | undefined
  /** Extra response headers, e.g. `Retry-After` on `rate_limited`. */
  readonly headers: Record<string, string> | undefined

  constructor(kind: ErrorKind, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(message)
    this.name = 'ApiError'
    this.kind = kind
    this.details = details
    this.headers = headers
  }

  get status(): number {
    return ERROR_STATUS[this.kind]
  }
}

/** Builds the wire shape of an error. Anything that is not an ApiError becomes `internal`, unexplained. */
export function errorBody(error: unknown): ErrorBody {
  if (error instanceof ApiError) {
    return error.details === undefined
      ? { kind: error.kind, message: error.message }
      : { kind: error.kind, message: error.message, details: error.details }
  }
  return { kind: 'internal', message: 'Internal error; it has been logged. Retry later.' }
}

/** The HTTP status for any thrown value. */
export function errorStatus(error: unknown): number {
  return error instanceof ApiError ? error.status : ERROR_STATUS.internal
}
