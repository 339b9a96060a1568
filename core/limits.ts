/**
 * Named limits, each with its unit and the place in the spec it comes from.
 */

/** List `limit`: 1-100, default 20 (spec: Limits, request and data limits). */
export const LIST_LIMIT_MIN = 1
export const LIST_LIMIT_MAX = 100
export const LIST_LIMIT_DEFAULT = 20

/**
 * Audit entries one filtered list request passes over at most: a rare filter on a long log then
 * answers a short (even empty) page with a nextCursor to go on, instead of reading the whole log.
 */
export const AUDIT_SCAN_MAX = 5_000

/** Subdomain label: 1-56 chars; generated labels stay within 40 (spec: Website.subdomain). */
export const SUBDOMAIN_LABEL_MAX_CHARS = 56
export const SUBDOMAIN_GENERATED_MAX_CHARS = 40

/** Length of the random suffix appended to a taken slug or generated label. */
export const RANDOM_SUFFIX_CHARS = 6

/** Website names and descriptions: generous bounds so nobody stores a novel in a name. */
export const WEBSITE_NAME_MAX_CHARS = 200
export const WEBSITE_DESCRIPTION_MAX_CHARS = 2000
export const SLUG_MAX_CHARS = 100
export const API_KEY_NAME_MAX_CHARS = 200

/** Default JSON request body limit for API operations; operations may declare their own. */
export const JSON_BODY_MAX_BYTES = 1 << 20

/** Rate limits per key (spec: Limits, rate limits). `perMinute` is the sustained refill rate. */
export const RATE_LIMITS = {
  standard: { burst: 120, perMinute: 600 },
  expensive: { burst: 20, perMinute: 30 },
} as const

export type RateClass = keyof typeof RATE_LIMITS

/**
 * A caller without a credential (public operations, refused credentials, unknown routes) draws from a
 * bucket of its client address with the standard class's numbers (spec: the standard class applies
 * to every operation not marked E).
 */
export const ADDRESS_RATE_LIMIT = RATE_LIMITS.standard

/** How long SIGTERM waits for in-flight requests before closing anyway. */
export const SHUTDOWN_DRAIN_MS = 10_000
/**
 * A request body that sends nothing for this long is answered 408 and its connection closed. uWS
 * closes a connection silently after 8-12 s without enough progress, so the answer must come first.
 */
export const BODY_IDLE_MS = 7_000

/**
 * A large file of a ticket deploy (over 1 MiB, sent first through /public/v1/deploys/uploads) up to
 * this size goes in one PUT; a larger one (up to the plan's largest file: 2 GiB on paid plans and with
 * billing off, this size on the free plan) in parts of DEPLOY_PART_BYTES, each checked against its SHA-256.
 */
export const DEPLOY_LARGE_FILE_MAX_BYTES = 100 * 1024 * 1024
/** The part size of a large deploy file sent in parts (the agent helper's SITE_PART_SIZE). */
export const DEPLOY_PART_BYTES = 100 * 1024 * 1024

/** Static deploy: 1 MiB per file, 2,000 files per website (spec: Limits). */
export const STATIC_FILE_MAX_BYTES = 1 << 20
export const STATIC_FILES_MAX = 2000

/**
 * One deploy request body. Not in the spec: it bounds what one JSON parse on the main thread may
 * cost (64 MiB parses in well under a second); larger sites deploy in several merge deploys.
 */
export const DEPLOY_BODY_MAX_BYTES = 64 << 20

/** A deploy ticket (begin_deploy): good for 5 minutes and one deploy of at most 100 MiB in one multipart request. */
export const DEPLOY_TICKET_MS = 5 * 60 * 1000
export const TICKET_DEPLOY_MAX_BYTES = 100 << 20

/** Files per multi-file read (spec: Limits). */
export const READ_FILES_MAX = 50

/** Site file paths: bytes of UTF-8 in one path. */
export const SITE_PATH_MAX_BYTES = 1024

/** Compressible responses at or over this size get gzip and brotli variants (issue: over 1 KiB). */
export const COMPRESS_MIN_BYTES = 1024

/** Brotli quality 11 up to this size; larger files use quality 9 (about ten times faster, a few % larger). */
export const BROTLI_MAX_QUALITY_BYTES = 128 << 10

/** str-replace: at most 50 files and 200 edits per call (spec: Limits). */
export const STR_REPLACE_MAX_FILES = 50
export const STR_REPLACE_MAX_EDITS = 200
/** search: contextLines at most 3; maxMatchesPerFile default 10, at most 50 (spec: Limits). */
export const SEARCH_CONTEXT_MAX = 3
export const SEARCH_MATCHES_PER_FILE_DEFAULT = 10
export const SEARCH_MATCHES_PER_FILE_MAX = 50
/** All matches of one search; past it the result says `truncated`. */
export const SEARCH_MATCHES_MAX = 1000

/** Served content kept in memory by default (PLINTH_CACHE_BYTES): 256 MiB. */
export const CACHE_BYTES_DEFAULT = 256 * 1024 * 1024

/** Framework sites whose warm build state (typecheck programs, esbuild contexts) is kept by default (PLINTH_WARM_SITES). */
export const WARM_SITES_DEFAULT = 20

/** A website actor nothing asked for during this long is evicted at the next sweep (after 5 to 10 minutes idle). */
export const ACTOR_IDLE_MS = 5 * 60_000

/** Dashboard sessions: idle expiry 7 days, absolute expiry 30 days; last use written at most hourly. */
export const SESSION_IDLE_MS = 7 * 24 * 3600_000
export const SESSION_MAX_MS = 30 * 24 * 3600_000
export const SESSION_TOUCH_MS = 3600_000

/** The owner's setup link is valid 24 hours (issue 12). */
export const SETUP_LINK_MS = 24 * 3600_000
/** Invitations and transfer codes expire in 7 days (spec: Limits, transfer code). */
export const INVITATION_MS = 7 * 24 * 3600_000
export const TRANSFER_MS = 7 * 24 * 3600_000

/** OAuth: codes live 10 minutes, access tokens 1 hour, refresh tokens 30 days (rotated on use). */
export const OAUTH_CODE_MS = 10 * 60_000
export const OAUTH_ACCESS_MS = 3600_000
export const OAUTH_REFRESH_MS = 30 * 24 * 3600_000

/** Website slots of each plan when billing is on (spec: Plans; PLINTH_PLAN_WEBSITES changes them). */
export const PLAN_WEBSITES_DEFAULT = { free: 1, base: 5, max: 25 } as const

/** Sign-in attempts: per email and per address, 10 at once then 10 per 15 minutes. */
export const SIGN_IN_RATE_LIMIT = { burst: 10, perMinute: 10 / 15 } as const

/** Passwords: 10 to 200 characters. */
export const PASSWORD_MIN_CHARS = 10
export const PASSWORD_MAX_CHARS = 200
/** Display names and emails. */
export const PERSON_NAME_MAX_CHARS = 200
export const EMAIL_MAX_CHARS = 254
/** A custom domain's hostname (DNS's limit). */
export const DOMAIN_HOSTNAME_MAX_CHARS = 253
/** Feedback messages. */
export const FEEDBACK_MAX_CHARS = 10_000

/** How long one request to Stripe may take before billing answers 502 (Stripe's own default is 80 s). */
export const STRIPE_TIMEOUT_MS = 20_000

// Anonymous publishing (spec: Anonymous limits)

/** Edits and the live window of an anonymous site: 24 hours from its creation. */
export const ANON_WINDOW_MS = 24 * 60 * 60 * 1000
/** Claimable until 7 days after the credential's first site; no site's window runs past it. */
export const ANON_CLAIM_WINDOW_MS = 7 * 24 * 60 * 60 * 1000
export const ANON_FILES_MAX = 25
export const ANON_FILE_MAX_BYTES = 1 << 20
export const ANON_TREE_MAX_BYTES = 5 << 20
export const ANON_BODY_MAX_BYTES = 8 << 20
/** Decoded bytes a credential may send over every create, update and swap (deletes do not refund). */
export const ANON_BUDGET_BYTES = 500 * (1 << 20)
/** Live anonymous sites per network (one IPv4 address or one IPv6 /64). */
export const ANON_NETWORK_LIVE_MAX = 50
/** Claim codes (`wc_`) are valid 10 minutes (spec: Limits). */
export const CLAIM_CODE_MS = 10 * 60 * 1000
/** How often the anonymous sweeper looks for windows that closed and credentials that expired. */
export const ANON_SWEEP_MS = 5_000
/** A deadline whose action failed (a platform fault) is tried again this much later. */
export const ANON_SWEEP_RETRY_MS = 60_000
/** Deadlines one sweep step acts on before it yields to the event loop (serving never waits long). */
export const ANON_SWEEP_BATCH = 1_000

const PER_DAY = 1 / (24 * 60)
/**
 * Per-credential and per-network buckets (spec: Anonymous limits): a burst, then a sustained rate;
 * `spec` is the spec's own figure, which the anonymous endpoints' descriptions quote.
 */
export const ANON_RATE_LIMITS = {
  /** Status reads and refused tokens: the standard class, per credential or network. */
  reads: {
    per: 'credential or network',
    burst: RATE_LIMITS.standard.burst,
    perMinute: RATE_LIMITS.standard.perMinute,
    spec: '120 then about 600 a minute (the standard class)',
  },
  credentialCreates: { per: 'credential', burst: 5, perMinute: 10 * PER_DAY, spec: '5 creates or swaps, then 10 a day' },
  credentialEdits: { per: 'credential', burst: 20, perMinute: 20 / 60, spec: '20 edits, then 20 an hour' },
  networkCredentials: { per: 'network', burst: 60, perMinute: 120 * PER_DAY, spec: '60 credentials, then 120 a day' },
  networkCreates: { per: 'network', burst: 100, perMinute: 200 * PER_DAY, spec: '100 creates, then 200 a day' },
  networkEdits: { per: 'network', burst: 200, perMinute: 10, spec: '200 edits, then 10 a minute' },
  networkClaims: { per: 'network', burst: 60, perMinute: 1, spec: '60 claims, then 60 an hour' },
  /**
   * Byte PUTs, resumes and cancels of shared-file uploads draw from this instead of `reads`: a
   * 1,000-file folder is 1,000 PUTs, which must not spend the reads burst (the agent helper treats a
   * 429 as a failed file). Not in the spec; the byte budget bounds what they can send.
   */
  uploadBytes: { per: 'credential', burst: 2_000, perMinute: 1_000, spec: '2,000 byte requests, then 1,000 a minute' },
} as const

export type AnonBucket = keyof typeof ANON_RATE_LIMITS

// Forms (spec: Forms)

/** File fields of one submission, in all (multipart). */
export const FORM_FILES_MAX_BYTES = 10 << 20
/** Bytes of submission files one website keeps, by default (PLINTH_FORM_FILES_BYTES). */
export const FORM_FILES_QUOTA_DEFAULT = 1 << 30
/** A whole submission body: the files and room for the fields. */
export const FORM_BODY_MAX_BYTES = FORM_FILES_MAX_BYTES + (1 << 20)
export const FORM_FIELDS_MAX = 200
/** One field's value. */
export const FORM_VALUE_MAX_CHARS = 64 * 1024
/** Submissions per client address and per site: a burst, then a sustained rate. */
export const FORM_RATE_LIMITS = {
  perAddress: { burst: 20, perMinute: 10 },
  perSite: { burst: 1_000, perMinute: 6_000 },
} as const

// Outbound requests made for users (form webhooks)

/** A request made for a user gets this long to answer. */
export const OUTBOUND_TIMEOUT_MS = 10_000
/** Its host name's DNS lookup. */
export const OUTBOUND_DNS_TIMEOUT_MS = 3_000
/** What is kept of its answer. */
export const OUTBOUND_RESPONSE_MAX_BYTES = 64 * 1024
/** Webhook retries: 30 s, doubling, at most an hour apart, for 24 hours after the submission. */
export const WEBHOOK_BACKOFF_START_MS = 30_000
export const WEBHOOK_BACKOFF_MAX_MS = 60 * 60 * 1000
export const WEBHOOK_RETRY_WINDOW_MS = 24 * 60 * 60 * 1000
/** Deliveries sent at once. */
export const WEBHOOK_CONCURRENCY = 8
/** How often the outbox is looked at. */
export const WEBHOOK_POLL_MS = 1_000
/** How often the mail outbox is looked at for messages due, and swept of those past 30 days. */
export const MAIL_POLL_MS = 1_000
export const MAIL_SWEEP_MS = 3_600_000

/** One DNS question of a domain verification. */
export const DNS_TIMEOUT_MS = 2_000
/** How soon a pending domain is worth checking again. */
export const DOMAIN_CHECK_AGAIN_SECONDS = 60

// Analytics (spec: Analytics)

/**
 * How often the edge beacon's tallies and raw buffer are folded into rollups and written (one LMDB
 * commit): the serving path only bumps counters, so the period costs it nothing; realtime lags by it.
 */
export const BEACON_FLUSH_MS = 1_000
/** Distinct referrer hosts a site keeps an hour; more are counted as `(other)`. */
export const REFERRERS_PER_HOUR = 1_000
/** Page views one flush interval may hold; more are dropped (and logged), never slowing serving down. */
export const BEACON_BUFFER_MAX = 500_000
/** analytics.query rows and analytics.timeseries points (spec: Limits). */
export const ANALYTICS_ROWS_DEFAULT = 25
export const ANALYTICS_ROWS_MAX = 1_000
export const ANALYTICS_MAX_POINTS_DEFAULT = 30
export const ANALYTICS_MAX_POINTS = 500
/** How often the tracker's collected events are hashed, folded into rollups and written (with the raw events). */
export const TRACKER_FLUSH_MS = 250

/** How often CMS items scheduled for publication are looked for (ms). */
export const CMS_PUBLISH_TICK_MS = 1000
/** Collected events one flush interval may hold; more are answered 503 (the visitor's browser does not retry), never queued without bound. */
export const TRACKER_BUFFER_MAX = 200_000
/** A collect body: one event of a page (title, path, query, referrer, custom data). */
export const TRACKER_BODY_MAX_BYTES = 8 * 1024
/** A custom event's `data`, as JSON. */
export const TRACKER_DATA_MAX_BYTES = 2 * 1024
/** A visit ends after this long without a page view (spec: Analytics; as Plausible and Umami count them). */
export const TRACKER_VISIT_GAP_MS = 30 * 60 * 1000
/** Raw tracker events kept by default (PLINTH_ANALYTICS_RETENTION_DAYS); rollups are kept for good. */
export const TRACKER_RETENTION_DAYS_DEFAULT = 90
/** Raw events a filtered query may read; past it the query is refused with what to narrow. */
export const TRACKER_SCAN_MAX = 3_000_000
/** Collect requests per client network (token bucket): a browser sends a few a page. */
export const TRACKER_RATE_LIMIT = { burst: 120, perMinute: 1_200 }
/** Distinct values a site keeps per dimension and hour; more are counted as \`(other)\`, so made-up paths and titles cannot grow the rollups without bound. */
export const TRACKER_VALUES_PER_HOUR = 2_000

// Shared files (spec: storage sites, Plans)

/** Shared-file storage of the free plan by default (spec: Plans, 1 GB), and how long its links last at most. */
export const FREE_STORAGE_BYTES = 1_000_000_000
export const FREE_LINK_MAX_DAYS = 7
/** One shared file (issue: 100 MiB per file) on the free plan and for anonymous credentials (spec: 100 MiB). */
export const STORAGE_FILE_MAX_BYTES = 100 * 1024 * 1024
/** One shared file on a paid plan, or with billing off (the skill: 2 GB per file), sent in parts. */
export const STORAGE_LARGE_FILE_MAX_BYTES = 2 * 1024 * 1024 * 1024
/** A file over this is sent in parts of this size (the last one shorter), each its own PUT. */
export const STORAGE_PART_BYTES = 100 * 1024 * 1024
/** Bytes of uploads in progress an organization may hold, beside its finished files. */
export const STORAGE_IN_PROGRESS_BYTES = 1024 * 1024 * 1024
/** The same on a paid plan or with billing off (files there may be 2 GiB each). */
export const STORAGE_IN_PROGRESS_PAID_BYTES = 10 * 1024 * 1024 * 1024
/** Files one begin call may announce (the agent skill sends folders in batches of this many). */
export const STORAGE_UPLOADS_PER_BEGIN = 1000
/** An upload with no activity (begin, or bytes received) for this long is dropped with its bytes. */
export const STORAGE_UPLOAD_ABANDON_MS = 60 * 60 * 1000
/** Byte PUTs with upload tokens (a signed-in folder's ready commands), per issuer: beside, not from, the API's 120 burst. */
export const UPLOAD_TOKEN_RATE_LIMIT = { burst: 2_000, perMinute: 1_000 }
/** Beginning the same file (website, path, size) again: 5 quickly, then 5 an hour (429 upload_retries); resuming is the way on. */
export const STORAGE_RESTART_LIMIT = { burst: 5, perMinute: 5 / 60 }
/** How long the upload token in a signed-in upload's ready command works (the upload's own idle limit). */
export const STORAGE_UPLOAD_TOKEN_MS = STORAGE_UPLOAD_ABANDON_MS
/** The random, unguessable end of a folder name a begin makes (`holiday-3f9a2c1b5e7d90a1c2b4`). */
export const STORAGE_FOLDER_SUFFIX_CHARS = 20
/** A folder path: segments of at most 100 characters, at most this long in all. */
export const STORAGE_FOLDER_MAX_CHARS = 500
/** A file name. */
export const STORAGE_NAME_MAX_CHARS = 255
/** A new folder's name as a begin takes it (the suffix is added after). */
export const STORAGE_NEW_FOLDER_MAX_CHARS = 200
/** Files a zip download of a folder may hold. */
export const STORAGE_ZIP_MAX_FILES = 10_000
/**
 * Bounds on a zip served from inside (an archive folder, or any shared zip browsed as a folder): its
 * entries, the bytes they inflate to in all, and how far an entry may inflate (an entry over 1 MiB
 * inflating more than this many times its compressed size is a zip bomb, not a folder). Refused at
 * finalize for `archive: true`; a zip over them is still a file to download, never unpacked.
 */
export const ARCHIVE_MAX_ENTRIES = 65_535
export const ARCHIVE_MAX_UNPACKED_BYTES = 4 * 1024 * 1024 * 1024
export const ARCHIVE_MAX_RATIO = 100

// Assets and images (issue 15)

/** One asset's bytes. */
export const ASSET_MAX_BYTES = 50 * 1024 * 1024
/** URLs one import call may fetch. */
export const ASSET_IMPORT_MAX_URLS = 10
/** Redirects an import follows, each target checked by the SSRF guard again. */
export const ASSET_IMPORT_MAX_REDIRECTS = 3
/** How long a two-step upload's signed URL works. */
export const ASSET_UPLOAD_URL_MS = 60 * 60 * 1000
/** Image width and height asked for on demand. */
export const IMAGE_MAX_DIMENSION = 4096
/** Pixels an input image may have: more is refused as a decompression bomb (sharp's limitInputPixels). */
export const IMAGE_MAX_INPUT_PIXELS = 50_000_000
/** Distinct variants a website's images may have; past it, widths round up to IMAGE_WIDTH_LADDER. */
export const IMAGE_VARIANTS_PER_SITE = 1_000
export const IMAGE_WIDTH_LADDER = [64, 128, 256, 384, 512, 640, 750, 828, 1080, 1200, 1600, 1920, 2048, 2560, 3840, 4096] as const
/** Rendered variants kept in memory (the rest are on disk). */
export const IMAGE_CACHE_BYTES = 64 * 1024 * 1024
/** Widths one variants call may pre-generate. */
export const IMAGE_PREGENERATE_MAX = 20

/** A CMS change waits this long for more before the website re-renders (a burst renders once). */
export const CMS_RERENDER_DELAY_MS = 500

/** A site password's length in characters (set_website_password). */
export const SITE_PASSWORD_MIN_CHARS = 4
export const SITE_PASSWORD_MAX_CHARS = 200
/** A form's notifications: at most this many addresses. */
export const FORM_NOTIFY_RECIPIENTS_MAX = 10
/** A form's notifications: a message per submission up to this many a minute, then one digest at the minute's end. */
export const FORM_NOTIFY_PER_MINUTE = 10
/** A form's digest the mail limits held back is tried again after this long. */
export const FORM_DIGEST_RETRY_MS = 10 * 60_000
/** How long the link confirming an address (not a member's) for a form's notifications works. */
export const FORM_NOTIFY_CONFIRM_MS = 7 * 24 * 3600_000
/** email_link: at most this many recipients a call (the product's skill says 10). */
export const SHARE_RECIPIENTS_MAX = 10
/** email_link: the plain-text message's length. */
export const SHARE_MESSAGE_MAX_CHARS = 2000

/** Wrong passwords at a protected site: per client address and site (spec leaves it open; as sign-in). */
export const SITE_PASSWORD_RATE_LIMIT = { burst: 10, perMinute: 10 } as const

/** Serving threads one server may run (PLINTH_SERVE_THREADS); the default is the machine's cores, up to this. */
export const SERVE_THREADS_MAX = 64

/** Renames of a workspace's namespace, and of each site's vanity label, for their lifetime: with billing off (PLINTH_NAMESPACE_RENAMES). */
export const NAMESPACE_RENAMES_DEFAULT = 5
/** The same with billing on, by plan (the free plan has no namespace). */
export const NAMESPACE_RENAMES_BY_PLAN = { free: 0, base: 1, max: 5 } as const
