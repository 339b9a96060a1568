// Website passwords: a slow hash in the store, and the visitor's cookie or Basic credentials checked without awaiting.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { SITE_PASSWORD_MAX_CHARS, SITE_PASSWORD_MIN_CHARS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { SitePasswordRecord } from '../../core/schemas/passwords.js'
import { websitesOfChanges, type WebsiteStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'
import { hashPassword, passwordMatches } from '../identity/password.js'
import { appendAudit } from '../organization/audit.js'

/** The cookie a correct password sets, on the host it was typed at (host-only, never a parent domain). */
export const PASSWORD_COOKIE = 'plinth_site_pass'
/** How long a visitor stays let in after typing the password. */
export const PASSWORD_COOKIE_MS = 7 * 24 * 60 * 60 * 1000
/** Basic credentials already checked stay good this long in memory, so scrypt runs once per visitor, not per request. */
const BASIC_CACHE_MS = 10 * 60 * 1000
const BASIC_CACHE_MAX = 10_000

/** The scope of a password: a website (its id), or a shared folder of it (`<websiteId>/<folder>`). */
export const folderScope = (websiteId: string, folder: string) => `${websiteId}/${folder}`

const NONE: string[] = []

/**
 * Passwords of websites (set_website_password) and of shared folders (set_folder_password), each
 * under its scope: the scrypt hash is stored, nothing else; the hosting plane asks `locked` (one Map
 * lookup, skipped entirely while nothing has a password) and `admits` (an HMAC of the cookie, or a
 * cached Basic check), both synchronous. A new password or its removal bumps the generation, which
 * ends every cookie of the old one.
 */
export class SitePasswords {
  readonly #byWebsite = new Map<string, { hash: string; generation: number }>()
  /** sha256(websiteId, generation, Authorization header) of Basic credentials that matched, until when. */
  readonly #basicOk = new Map<string, number>()
  /** Websites with at least one protected folder. */
  readonly #withFolders = new Set<string>()

  constructor(
    private readonly store: WebsiteStore,
    private readonly clock: Clock,
    /** Websites' lanes: a password set, moved or removed runs in its website's. */
    private readonly lanes: Mailboxes,
    private readonly key: Buffer,
    /** Told when a website's or folder's password changes (a cache tier in front is purged). */
    private readonly changed: (websiteId: string) => void = () => undefined,
  ) {
    for (const { value } of store.sitePasswords.range({ start: '', end: '\uffff' })) {
      const scope = value.folder === undefined ? value.websiteId : folderScope(value.websiteId, value.folder)
      this.#byWebsite.set(scope, { hash: value.hash, generation: value.generation })
      if (value.folder !== undefined) this.#withFolders.add(value.websiteId)
    }
    store.changes.listen(['site-passwords'], (changes) => {
      for (const id of websitesOfChanges(changes)) this.#reload(id)
    })
  }

  /** Reads a website's passwords again from the store (after a change made elsewhere: a cluster's log entry applied here). */
  #reload(websiteId: string): void {
    for (const scope of [...this.#byWebsite.keys()])
      if (scope === websiteId || scope.startsWith(`${websiteId}/`)) this.#byWebsite.delete(scope)
    this.#withFolders.delete(websiteId)
    for (const { value } of this.store.sitePasswords.range({ start: websiteId, end: `${websiteId}0` })) {
      if (value.websiteId !== websiteId) continue
      const scope = value.folder === undefined ? value.websiteId : folderScope(value.websiteId, value.folder)
      this.#byWebsite.set(scope, { hash: value.hash, generation: value.generation })
      if (value.folder !== undefined) this.#withFolders.add(value.websiteId)
    }
  }

  /** True when the scope (a website id, or a folder's scope) has a password. */
  locked(scope: string): boolean {
    return this.#byWebsite.size !== 0 && this.#byWebsite.has(scope)
  }

  /**
   * The scopes of every protected folder a path of a storage site is in (`parts`: its segments),
   * outermost first; empty when none. A visitor needs each one's password (a folder inside a
   * protected folder may have its own).
   */
  lockedFolders(websiteId: string, parts: string[]): string[] {
    if (!this.#withFolders.has(websiteId)) return NONE
    const out: string[] = []
    for (let i = 1; i <= parts.length; i++) {
      const scope = folderScope(websiteId, parts.slice(0, i).join('/'))
      if (this.#byWebsite.has(scope)) out.push(scope)
    }
    return out
  }

  /**
   * A folder moved (move_folder) or deleted (`to` null): the passwords of it and of the folders
   * under it follow it, or go. Called before the files move, so they are never reachable without it.
   */
  moveFolder(website: WebsiteRecord, from: string, to: string | null): Promise<void> {
    return this.lanes.run(website.id, () => this.#moveFolder(website, from, to))
  }

  async #moveFolder(website: WebsiteRecord, from: string, to: string | null): Promise<void> {
    const prefix = folderScope(website.id, from)
    const moved: { scope: string; record: SitePasswordRecord }[] = []
    for (const { key, value } of this.store.sitePasswords.range({ start: prefix, end: `${prefix}/\uffff` })) {
      const scope = key as string
      if (scope === prefix || scope.startsWith(`${prefix}/`)) moved.push({ scope, record: value })
    }
    if (moved.length === 0) return
    await this.store.commit(() => {
      for (const { scope, record } of moved) {
        if (to !== null) {
          const folder = to + record.folder!.slice(from.length)
          this.store.sitePasswords.put(folderScope(website.id, folder), { ...record, folder })
        }
        this.store.sitePasswords.remove(scope)
      }
    })
    for (const { scope, record } of moved) {
      this.#byWebsite.delete(scope)
      if (to !== null)
        this.#byWebsite.set(folderScope(website.id, to + record.folder!.slice(from.length)), {
          hash: record.hash,
          generation: record.generation,
        })
    }
    this.changed(website.id)
  }

  /**
   * Sets (a string) or removes (null) the password of the website, or of one of its shared folders;
   * audited as `website.password_set` or `website.password_removed` (a folder's name in the metadata).
   */
  async set(website: WebsiteRecord, actor: AuditActorValue, password: string | null, folder?: string): Promise<{ protected: boolean }> {
    if (password !== null && (password.length < SITE_PASSWORD_MIN_CHARS || password.length > SITE_PASSWORD_MAX_CHARS))
      throw new ApiError('validation', `A site password is ${SITE_PASSWORD_MIN_CHARS} to ${SITE_PASSWORD_MAX_CHARS} characters`, {
        field: 'body.password',
      })
    const hash = password === null ? null : await hashPassword(password)
    return this.lanes.run(website.id, () => this.#set(website, actor, hash, folder))
  }

  async #set(
    website: WebsiteRecord,
    actor: AuditActorValue,
    hash: string | null,
    folder: string | undefined,
  ): Promise<{ protected: boolean }> {
    const now = this.clock.now()
    const scope = folder === undefined ? website.id : folderScope(website.id, folder)
    const generation = await this.store.commit(() => {
      const current = this.store.sitePasswords.get(scope)
      const next = (current?.generation ?? 0) + 1
      if (hash === null) this.store.sitePasswords.remove(scope)
      else
        this.store.sitePasswords.put(scope, {
          v: 1,
          websiteId: website.id,
          hash,
          generation: next,
          setAt: now,
          ...(folder === undefined ? {} : { folder }),
        })
      appendAudit(this.store, website.orgId, actor, now, {
        eventType: hash === null ? 'website.password_removed' : 'website.password_set',
        resourceType: 'website',
        resourceId: website.id,
        websiteId: website.id,
        metadata: folder === undefined ? {} : { folder },
      })
      return next
    })
    if (hash === null) this.#byWebsite.delete(scope)
    else this.#byWebsite.set(scope, { hash, generation })
    if (folder !== undefined && hash !== null) this.#withFolders.add(website.id)
    this.changed(website.id)
    return { protected: hash !== null }
  }

  /** Forgets a purged website's passwords, its folders' too (inside the purge's commit). */
  removeWebsite(websiteId: string): void {
    const scopes = [websiteId]
    for (const { key } of this.store.sitePasswords.range({ start: `${websiteId}/`, end: `${websiteId}/\uffff` })) scopes.push(key as string)
    for (const scope of scopes) {
      this.store.sitePasswords.remove(scope)
      this.#byWebsite.delete(scope)
    }
    this.#withFolders.delete(websiteId)
  }

  /**
   * Bound to the scope, the password's generation and its hash: the hash's salt is new with every
   * password set, so a cookie of an earlier password never lets in again, even after a removal
   * (which starts the generations over).
   */
  #mac(scope: string, entry: { hash: string; generation: number } | undefined, expiresAt: number): string {
    return createHmac('sha256', this.key)
      .update(`site-password:${scope}:${entry?.generation ?? 0}:${entry?.hash ?? ''}:${expiresAt}`)
      .digest('base64url')
  }

  /** The cookie value a correct password earns: `<expiry>.<mac>`, bound to the website and its password's generation. */
  cookieFor(websiteId: string): { value: string; maxAgeSeconds: number } {
    const entry = this.#byWebsite.get(websiteId)
    const expiresAt = this.clock.now() + PASSWORD_COOKIE_MS
    return { value: `${expiresAt}.${this.#mac(websiteId, entry, expiresAt)}`, maxAgeSeconds: PASSWORD_COOKIE_MS / 1000 }
  }

  /**
   * Synchronous: true when the request carries a live cookie of the current password, or Basic
   * credentials already checked. 'basic' when it carries Basic credentials not checked yet (the caller
   * checks them off the serving path with `checkBasic`).
   */
  admits(websiteId: string, cookie: string, authorization: string): boolean | 'basic' {
    const entry = this.#byWebsite.get(websiteId)
    if (entry === undefined) return true
    if (cookie.includes(PASSWORD_COOKIE)) {
      for (const part of cookie.split(';')) {
        const [name, value] = part.trim().split('=')
        if (name !== PASSWORD_COOKIE || value === undefined) continue
        const [expiry, mac] = value.split('.')
        const expiresAt = Number(expiry)
        if (!(expiresAt > this.clock.now()) || mac === undefined) continue
        const expected = Buffer.from(this.#mac(websiteId, entry, expiresAt))
        const given = Buffer.from(mac)
        if (expected.length === given.length && timingSafeEqual(expected, given)) return true
      }
    }
    if (/^basic\s/i.test(authorization)) {
      const until = this.#basicOk.get(this.#basicKey(websiteId, entry.generation, authorization))
      return until !== undefined && until > this.clock.now() ? true : 'basic'
    }
    return false
  }

  #basicKey(websiteId: string, generation: number, authorization: string): string {
    return createHash('sha256').update(`${websiteId}\n${generation}\n${authorization}`).digest('base64url')
  }

  /** Checks Basic credentials (any user name) against the password, on libuv's threads; remembered when right. */
  async checkBasic(websiteId: string, authorization: string): Promise<boolean> {
    const entry = this.#byWebsite.get(websiteId)
    if (entry === undefined) return true
    const decoded = Buffer.from(authorization.replace(/^basic\s+/i, ''), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const ok = colon !== -1 && (await this.check(websiteId, decoded.slice(colon + 1)))
    if (ok) {
      if (this.#basicOk.size >= BASIC_CACHE_MAX) this.#basicOk.clear()
      this.#basicOk.set(this.#basicKey(websiteId, entry.generation, authorization), this.clock.now() + BASIC_CACHE_MS)
    }
    return ok
  }

  /** A typed password against the website's (scrypt, off the event loop). */
  async check(websiteId: string, password: string): Promise<boolean> {
    const entry = this.#byWebsite.get(websiteId)
    return entry === undefined ? true : passwordMatches(password, entry.hash)
  }
}
