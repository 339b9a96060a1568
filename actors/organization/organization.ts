import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newApiKeySecret, newId, secretHint } from '../../core/ids.js'
import type { Principal } from '../../core/principal.js'
import type { AccessScope, CreateApiKeyInput, UpdateApiKeyInput } from '../../core/schemas/api-key.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { ApiKeyRecord, OrganizationRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { CreateWebsiteInput } from '../../core/schemas/website.js'
import type { OrganizationStore } from './tables.js'
import { cursorBelow, pageDescending } from '../../core/cursor.js'
import { appendAudit, auditActor } from './audit.js'
import { writeNewWebsite } from '../website/record.js'
import { firstVersion } from '../website/versions.js'
import { Mailbox } from '../mailbox.js'
import { assertUsableLabel, freeName, labelFromSlug, slugFromName, SLUG_MAX_CHARS, SUBDOMAIN_GENERATED_MAX_CHARS } from '../names.js'
import type { HostnameTable } from '../domains/hostnames.js'

export interface OrganizationActorDeps {
  store: OrganizationStore
  clock: Clock
  /** The one owner of labels: creation claims one inside its commit. */
  hostnames: HostnameTable
  /** Called after a website is created and durable. */
  websiteCreated(record: WebsiteRecord): void
  /** 402 `plan_limit` when the plan has no room for one more website of a kind; inside the commit. */
  assertRoom(orgId: string, kind: string): void
}

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

/**
 * The only writer of an organization's websites list and API keys. Creation checks slug and label
 * uniqueness inside the same transaction that claims them, so two creations can never both win.
 */
export class OrganizationActor {
  /** Commands one at a time; its holds and `touched` flag say whether the registry may evict this actor. */
  readonly mailbox = new Mailbox()

  constructor(
    readonly record: OrganizationRecord,
    private readonly deps: OrganizationActorDeps,
  ) {}

  get id(): string {
    return this.record.id
  }

  drained(): Promise<void> {
    return this.mailbox.drained()
  }

  /** Lets the actor go (evicted when idle): its mailbox refuses every later command. */
  retire(): void {
    this.mailbox.close(`organization ${this.id}: this actor was evicted while idle; commands go to the registry's current actor`)
  }

  createWebsite(
    actor: AuditActorValue,
    input: CreateWebsiteInput,
    extra: Pick<Partial<WebsiteRecord>, 'previewUntil'> = {},
  ): Promise<WebsiteRecord> {
    return this.mailbox.run(async () => {
      const { store, clock, hostnames } = this.deps
      const now = clock.now()
      const orgId = this.id
      if (input.subdomain !== undefined) assertUsableLabel(input.subdomain, hostnames.reservedLabels, 'body.subdomain')
      const record = await store.commit(() => {
        this.deps.assertRoom(orgId, input.kind ?? 'framework')
        let slug: string
        if (input.slug !== undefined) {
          if (store.slugs.get([orgId, input.slug]) !== undefined) {
            throw new ApiError(
              'conflict',
              `slug "${input.slug}" is taken by another website of this organization; choose another or omit slug`,
              {
                field: 'body.slug',
              },
            )
          }
          slug = input.slug
        } else {
          slug = freeName(slugFromName(input.name), SLUG_MAX_CHARS, (s) => store.slugs.get([orgId, s]) === undefined)
        }
        const subdomain = input.subdomain ?? hostnames.freeLabel(labelFromSlug(slug), SUBDOMAIN_GENERATED_MAX_CHARS)
        const id = newId('ws')
        hostnames.claim(subdomain, id, 'body.subdomain', 'choose another or omit subdomain')
        const seq = store.nextSeq()
        const website: WebsiteRecord = {
          v: 1,
          id,
          orgId,
          seq,
          name: input.name,
          kind: input.kind ?? 'framework',
          slug,
          subdomain,
          description: input.description ?? null,
          headVersion: 1,
          publishedVersion: null,
          createdAt: now,
          updatedAt: now,
          deletedAt: null,
          suspendedAt: null,
          suspendedReason: null,
          ...extra,
        }
        writeNewWebsite(store, website, firstVersion(website.id, actor, now))
        appendAudit(store, orgId, actor, now, {
          eventType: 'website.created',
          resourceType: 'website',
          resourceId: website.id,
          websiteId: website.id,
          metadata: { kind: website.kind, slug, subdomain },
        })
        return website
      })
      this.deps.websiteCreated(record)
      return record
    })
  }

  /** Website ids of the organization, newest first; `trash` lists soft-deleted ones. */
  listWebsiteIds(scope: 'live' | 'trash', limit: number, cursor: string | undefined, include: (id: string) => boolean): Page<string> {
    const below = cursorBelow(cursor)
    return pageDescending(
      this.deps.store.websitesByOrg.range({ start: [this.id, scope, below], end: [this.id, scope, 0], reverse: true }),
      {
        numberOf: (entry) => (entry.key as [string, string, number])[2],
        below,
        limit,
        include: (entry) => include(entry.value),
        map: (entry) => entry.value,
      },
    )
  }

  // API keys

  /** Creates a key; the secret is returned here once and stored only as a hash. */
  createKey(principal: Principal, input: CreateApiKeyInput): Promise<{ record: ApiKeyRecord; secret: string }> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.deps
      const now = clock.now()
      this.#checkAccess(input.access, 'body.access')
      const expiresAt = input.expiresAt === undefined ? null : this.#futureTime(input.expiresAt, now)
      const secret = newApiKeySecret()
      const record = await store.commit(() => {
        this.#checkWebsiteIds(input.access)
        const created = insertApiKey(store, this.id, auditActor(principal), now, {
          name: input.name ?? null,
          access: normalizeAccess(input.access),
          expiresAt,
          secret,
        })
        return created
      })
      return { record, secret }
    })
  }

  /** A key of this organization, or 404. */
  getKey(keyId: string): ApiKeyRecord {
    const record = this.deps.store.apiKeys.get(keyId)
    if (record === undefined || record.orgId !== this.id) throw new ApiError('not_found', `API key ${keyId} not found`)
    return record
  }

  listKeys(options: { includeRevoked: boolean; websiteId?: string; limit: number; cursor?: string }): Page<ApiKeyRecord> {
    const { store } = this.deps
    const orgId = this.id
    const below = cursorBelow(options.cursor)
    const records = function* () {
      for (const { value } of store.keysByOrg.range({ start: [orgId, below], end: [orgId, 0], reverse: true })) {
        const record = store.apiKeys.get(value)
        if (record !== undefined) yield record
      }
    }
    return pageDescending(records(), {
      numberOf: (record) => record.seq,
      below,
      limit: options.limit,
      include: (record) =>
        (options.includeRevoked || record.revokedAt === null) &&
        (options.websiteId === undefined || keyReaches(record.access, options.websiteId)),
    })
  }

  /** Name, access or expiry; takes effect on the next request made with the key. */
  updateKey(principal: Principal, keyId: string, input: UpdateApiKeyInput): Promise<ApiKeyRecord> {
    return this.#keyCommand(principal, keyId, 'api_key.updated', (current, now) => {
      if (current.revokedAt !== null) throw revokedError(keyId)
      const next: ApiKeyRecord = { ...current, updatedAt: now }
      const changed: string[] = []
      if (input.name !== undefined) {
        next.name = input.name
        changed.push('name')
      }
      if (input.access !== undefined) {
        this.#checkAccess(input.access, 'body.access')
        this.#checkWebsiteIds(input.access)
        next.access = normalizeAccess(input.access)
        changed.push('access')
      }
      if (input.expiresAt !== undefined) {
        next.expiresAt = input.expiresAt === null ? null : this.#futureTime(input.expiresAt, now)
        changed.push('expiresAt')
      }
      return { next, metadata: { changed } }
    })
  }

  /** A new secret; the old one stops working at once. */
  rotateKey(principal: Principal, keyId: string): Promise<{ record: ApiKeyRecord; secret: string }> {
    const secret = newApiKeySecret()
    return this.#keyCommand(principal, keyId, 'api_key.rotated', (current, now) => {
      if (current.revokedAt !== null) throw revokedError(keyId)
      const { store } = this.deps
      const next: ApiKeyRecord = {
        ...current,
        secretHash: hashSecret(secret),
        secretHint: secretHint(secret),
        rotatedAt: now,
        updatedAt: now,
      }
      store.keysByHash.remove(current.secretHash)
      store.keysByHash.put(next.secretHash, keyId)
      return { next }
    }).then((record) => ({ record, secret }))
  }

  /** Permanent revoke: the secret stops working at once; the record stays for `status=all`. */
  revokeKey(principal: Principal, keyId: string): Promise<ApiKeyRecord> {
    return this.#keyCommand(principal, keyId, 'api_key.revoked', (current, now) => {
      if (current.revokedAt !== null) return { next: current }
      this.deps.store.keysByHash.remove(current.secretHash)
      return { next: { ...current, revokedAt: now, updatedAt: now } }
    })
  }

  #keyCommand(
    principal: Principal,
    keyId: string,
    eventType: 'api_key.updated' | 'api_key.rotated' | 'api_key.revoked',
    change: (current: ApiKeyRecord, now: number) => { next: ApiKeyRecord; metadata?: Record<string, unknown> },
  ): Promise<ApiKeyRecord> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.deps
      const now = clock.now()
      return store.commit(() => {
        const current = this.getKey(keyId)
        const { next, metadata } = change(current, now)
        if (next === current) return current
        store.apiKeys.put(keyId, next)
        appendAudit(store, this.id, auditActor(principal), now, {
          eventType,
          resourceType: 'api_key',
          resourceId: keyId,
          websiteId: null,
          metadata: metadata ?? {},
        })
        return next
      })
    })
  }

  #checkAccess(access: AccessScope, field: string): void {
    if (access.kind === 'websites' && (access.websiteIds === undefined || access.websiteIds.length === 0)) {
      throw new ApiError('validation', `${field}.websiteIds is required when access.kind is "websites"`, { field: `${field}.websiteIds` })
    }
    if (access.kind === 'organization' && access.websiteIds !== undefined) {
      throw new ApiError('validation', `${field}.websiteIds is only for access.kind "websites"; an organization key covers every website`, {
        field: `${field}.websiteIds`,
      })
    }
    if (access.kind === 'websites' && access.role === 'admin') {
      throw new ApiError('validation', `${field}.role "admin" needs access.kind "organization"; use full_editor for website-scoped keys`, {
        field: `${field}.role`,
      })
    }
  }

  /** Website ids of a scoped key must be websites of this organization (same message for any other id). */
  #checkWebsiteIds(access: AccessScope): void {
    for (const [i, id] of (access.websiteIds ?? []).entries()) {
      const website = this.deps.store.websites.get(id)
      if (website === undefined || website.orgId !== this.id) {
        throw new ApiError('validation', `body.access.websiteIds[${i}] ${id} is not a website of this organization`, {
          field: `body.access.websiteIds[${i}]`,
        })
      }
    }
  }

  #futureTime(text: string, now: number): number {
    const at = Date.parse(text)
    if (!(at > now)) throw new ApiError('validation', 'body.expiresAt must be a time in the future', { field: 'body.expiresAt' })
    return at
  }
}

function normalizeAccess(access: AccessScope): AccessScope {
  return access.kind === 'organization'
    ? { kind: 'organization', role: access.role }
    : { kind: 'websites', role: access.role, websiteIds: [...(access.websiteIds ?? [])] }
}

function keyReaches(access: AccessScope, websiteId: string): boolean {
  return access.kind === 'organization' || (access.websiteIds ?? []).includes(websiteId)
}

function revokedError(keyId: string): ApiError {
  return new ApiError('conflict', `API key ${keyId} is revoked and cannot change; create a new key instead`, { reason: 'key_revoked' })
}

/** Writes a new API key (hash only), its indexes and its audit event; only inside `store.commit`. */
export function insertApiKey(
  store: OrganizationStore,
  orgId: string,
  actor: AuditActorValue,
  now: number,
  key: { name: string | null; access: AccessScope; expiresAt: number | null; secret: string },
): ApiKeyRecord {
  const seq = store.nextSeq()
  const record: ApiKeyRecord = {
    v: 1,
    id: newId('key'),
    orgId,
    seq,
    name: key.name,
    secretHash: hashSecret(key.secret),
    secretHint: secretHint(key.secret),
    access: key.access,
    createdAt: now,
    updatedAt: now,
    expiresAt: key.expiresAt,
    revokedAt: null,
    rotatedAt: null,
  }
  store.apiKeys.put(record.id, record)
  store.keysByHash.put(record.secretHash, record.id)
  store.keysByOrg.put([orgId, seq], record.id)
  appendAudit(store, orgId, actor, now, {
    eventType: 'api_key.created',
    resourceType: 'api_key',
    resourceId: record.id,
    websiteId: null,
    metadata: { name: record.name, access: record.access },
  })
  return record
}
