import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import {
  EMAIL_MAX_CHARS,
  PASSWORD_MAX_CHARS,
  PASSWORD_MIN_CHARS,
  PERSON_NAME_MAX_CHARS,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  SESSION_TOUCH_MS,
  SETUP_LINK_MS,
} from '../../core/limits.js'
import type { PersonRole } from '../../core/roles.js'
import type { CollaboratorRecord, MembershipRecord, PersonRecord, SessionRecord } from '../../core/schemas/identity.js'
import type { OrganizationRecord } from '../../core/schemas/records.js'
import type { Change } from '../../core/store/changes.js'
import { PEOPLE_CACHED, type IdentityStore } from './tables.js'
import { Mailbox } from '../mailbox.js'
import { insertOrganization } from '../organization/records.js'
import { DECOY_HASH, hashPassword, passwordMatches } from './password.js'

/** Emails compare case-insensitively: the index key. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase()
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** Whether a text is a usable email address (checkEmail's rule, without the error). */
export function isEmail(text: string): boolean {
  return EMAIL.test(text) && text.length <= EMAIL_MAX_CHARS
}

/** A usable email, or a 400 naming `field`. */
export function checkEmail(email: string, field: string): string {
  const trimmed = email.trim()
  if (!EMAIL.test(trimmed) || trimmed.length > EMAIL_MAX_CHARS)
    throw new ApiError('validation', `${field} is not an email address such as ada@example.com`, { field })
  return trimmed
}

/** A display name: trimmed, at most PERSON_NAME_MAX_CHARS, or a 400 naming `field`. */
export function checkName(name: string, field: string): string {
  const trimmed = name.trim()
  if (trimmed.length > PERSON_NAME_MAX_CHARS)
    throw new ApiError('validation', `${field} must be at most ${PERSON_NAME_MAX_CHARS} characters`, { field })
  return trimmed
}

/** A usable password, or a 400 naming `field` (never echoing it). */
export function checkPassword(password: string, field: string): void {
  if (password.length < PASSWORD_MIN_CHARS || password.length > PASSWORD_MAX_CHARS) {
    throw new ApiError('validation', `${field} must be ${PASSWORD_MIN_CHARS} to ${PASSWORD_MAX_CHARS} characters long`, { field })
  }
}

/** A workspace as a person sees it. */
export interface Workspace {
  id: string
  name: string
  role: PersonRole
  personal: boolean
}

/**
 * Persons, their memberships and collaborations, and dashboard sessions: the single writer of all
 * of them (one mailbox) and the in-memory index the authentication step reads on every request, so
 * a session costs one hash and one Map lookup, as an API key does. Every change is committed to
 * LMDB first, then mirrored here.
 */
export class People {
  readonly mailbox = new Mailbox()
  readonly #persons = new Map<string, PersonRecord>()
  /** person id to organization id to role. */
  readonly #roles = new Map<string, Map<string, PersonRole>>()
  /** person id to website id to collaboration. */
  readonly #collaborations = new Map<string, Map<string, CollaboratorRecord>>()
  /** session hash to session. */
  readonly #sessions = new Map<string, SessionRecord>()

  constructor(
    readonly store: IdentityStore,
    readonly clock: Clock,
  ) {
    this.#load()
    store.changes.listen(PEOPLE_CACHED, (changes) => this.#changed(changes))
  }

  #load(): void {
    const { store } = this
    for (const { value } of store.persons.range({ start: '', end: '\uffff' })) this.#persons.set(value.id, value)
    for (const { value } of store.memberships.range({ start: [''], end: ['\uffff'] }))
      this.#setRole(value.personId, value.orgId, value.role)
    for (const { value } of store.collaborators.range({ start: [''], end: ['\uffff'] })) this.#setCollaboration(value)
    const now = this.clock.now()
    for (const { key, value } of store.sessions.range({ start: '', end: '\uffff' })) {
      if (sessionLive(value, now)) this.#sessions.set(key as string, value)
    }
  }

  /**
   * Takes a change made elsewhere (a cluster's log entry applied here) to the tables this index
   * mirrors, key by key, as the commits of this concern's own actor do.
   */
  #changed(changes: readonly Change[]): void {
    const now = this.clock.now()
    for (const { table, key, value } of changes) {
      switch (table) {
        case 'persons': {
          if (value === null) this.#persons.delete(key as string)
          else this.#persons.set(key as string, value as PersonRecord)
          break
        }
        case 'memberships': {
          const [orgId, personId] = key as [string, string]
          this.mirrorMembership(personId, orgId, value === null ? null : (value as MembershipRecord).role)
          break
        }
        case 'collaborators': {
          const [websiteId, personId] = key as [string, string]
          if (value !== null) this.#setCollaboration(value as CollaboratorRecord)
          else this.#collaborations.get(personId)?.delete(websiteId)
          break
        }
        case 'sessions': {
          if (value !== null && sessionLive(value as SessionRecord, now)) this.#sessions.set(key as string, value as SessionRecord)
          else this.#sessions.delete(key as string)
          break
        }
      }
    }
  }

  // Persons

  person(id: string): PersonRecord | undefined {
    return this.#persons.get(id)
  }

  personByEmail(email: string): PersonRecord | undefined {
    const id = this.store.personsByEmail.get(emailKey(email))
    return id === undefined ? undefined : this.#persons.get(id)
  }

  /**
   * A new person with a personal workspace (an organization they own). Inside `store.commit` only;
   * call `adopt` with the result after the commit.
   */
  insertPerson(
    input: { email: string | null; name: string; passwordHash: string | null; orgName?: string },
    now: number,
  ): { person: PersonRecord; org: OrganizationRecord; membership: MembershipRecord } {
    const { store } = this
    if (input.email !== null && store.personsByEmail.get(emailKey(input.email)) !== undefined) {
      throw new ApiError(
        'conflict',
        `A person with the email ${input.email} already exists; sign in instead, or reset the password with plinth user reset-password`,
        { field: 'email' },
      )
    }
    const person: PersonRecord = {
      v: 1,
      id: newId('usr'),
      email: input.email,
      name: input.name,
      passwordHash: input.passwordHash,
      personalOrgId: '',
      createdAt: now,
      updatedAt: now,
    }
    const org: OrganizationRecord = { v: 1, id: newId('org'), name: input.orgName ?? `${input.name}'s workspace`, createdAt: now }
    person.personalOrgId = org.id
    insertOrganization(store, org)
    store.persons.put(person.id, person)
    if (input.email !== null) store.personsByEmail.put(emailKey(input.email), person.id)
    const membership = insertMembership(store, org.id, person.id, 'owner', now)
    return { person, org, membership }
  }

  /** Mirrors a committed person and membership in memory. */
  adopt(person: PersonRecord, membership?: MembershipRecord): void {
    this.#persons.set(person.id, person)
    if (membership !== undefined) this.#setRole(membership.personId, membership.orgId, membership.role)
  }

  /** `plinth user add`: a person with an email, a password and a personal workspace. */
  async addPerson(input: { email: string; name: string; password: string }): Promise<PersonRecord> {
    const email = checkEmail(input.email, 'email')
    const name = checkName(input.name, 'name')
    checkPassword(input.password, 'password')
    const passwordHash = await hashPassword(input.password)
    return this.mailbox.run(async () => {
      const now = this.clock.now()
      const created = await this.store.commit(() => this.insertPerson({ email, name: name || email, passwordHash }, now))
      this.adopt(created.person, created.membership)
      return created.person
    })
  }

  /**
   * Sets the person's email, name and password (owner setup, password reset, the account screen);
   * ends their sessions when the password changes, all but `keepSession` (a session's hash) when given.
   */
  async updatePerson(
    personId: string,
    change: { email?: string; name?: string; password?: string },
    keepSession: string | null = null,
  ): Promise<PersonRecord> {
    const email = change.email === undefined ? undefined : checkEmail(change.email, 'email')
    const name = change.name === undefined ? undefined : checkName(change.name, 'name')
    if (change.password !== undefined) checkPassword(change.password, 'password')
    const passwordHash = change.password === undefined ? undefined : await hashPassword(change.password)
    return this.mailbox.run(async () => {
      const { store } = this
      const now = this.clock.now()
      const ended: string[] = []
      const next = await store.commit(() => {
        const current = store.persons.get(personId)
        if (current === undefined) throw new ApiError('not_found', `Person ${personId} not found`)
        const next: PersonRecord = { ...current, updatedAt: now }
        if (email !== undefined && emailKey(email) !== emailKey(current.email ?? '')) {
          const owner = store.personsByEmail.get(emailKey(email))
          if (owner !== undefined && owner !== personId)
            throw new ApiError('conflict', `Another person already uses ${email}; choose another email`, { field: 'email' })
          if (current.email !== null) store.personsByEmail.remove(emailKey(current.email))
          store.personsByEmail.put(emailKey(email), personId)
        }
        if (email !== undefined) {
          next.email = email
          delete next.pendingEmail
        }
        if (name !== undefined && name !== '') next.name = name
        if (passwordHash !== undefined) {
          next.passwordHash = passwordHash
          for (const [hash, session] of this.#sessions) {
            if (session.personId === personId && hash !== keepSession) {
              store.sessions.remove(hash)
              ended.push(hash)
            }
          }
        }
        store.persons.put(personId, next)
        return next
      })
      for (const hash of ended) this.#sessions.delete(hash)
      this.#persons.set(personId, next)
      return next
    })
  }

  /**
   * A change to the person's record, in one commit through this concern's mailbox: `write` gets the
   * record as stored and returns the next one (writing whatever else belongs in the same commit);
   * the in-memory copy follows.
   */
  changePerson(personId: string, write: (current: PersonRecord) => PersonRecord): Promise<PersonRecord> {
    return this.mailbox.run(async () => {
      const next = await this.store.commit(() => {
        const current = this.store.persons.get(personId)
        if (current === undefined) throw new ApiError('not_found', `Person ${personId} not found`)
        const next = write(current)
        this.store.persons.put(personId, next)
        return next
      })
      this.#persons.set(personId, next)
      return next
    })
  }

  // Setup link

  /** Uses a setup code once: sets email, name and password of its person and signs them in. */
  /** Whether a setup link still works (its page says so when it is opened), and until when. */
  setupLink(code: string): { valid: boolean; expiresAt: number | null } {
    const record = code === '' ? undefined : this.store.oneTime.get(hashSecret(code))
    if (record === undefined || record.kind !== 'setup' || record.expiresAt <= this.clock.now()) return { valid: false, expiresAt: null }
    return { valid: true, expiresAt: record.expiresAt }
  }

  async completeSetup(
    code: string,
    input: { email: string; name?: string; password: string },
    device = '',
  ): Promise<{ person: PersonRecord; session: string }> {
    const hash = hashSecret(code)
    const record = this.store.oneTime.get(hash)
    if (record === undefined || record.kind !== 'setup' || record.expiresAt <= this.clock.now()) {
      throw new ApiError(
        'not_found',
        'This setup link is unknown, used or expired; ask the operator for a new one (plinth user reset-password)',
      )
    }
    const person = await this.updatePerson(record.personId, { email: input.email, name: input.name, password: input.password })
    await this.store.commit(() => this.store.oneTime.remove(hash))
    return { person, session: await this.startSession(person.id, device) }
  }

  // Sessions

  /** Checks a password; the same answer (and about the same time) whether the email is unknown or the password wrong. */
  async verifyPassword(email: string, password: string): Promise<PersonRecord | null> {
    const person = this.personByEmail(email)
    const ok = await passwordMatches(password, person?.passwordHash ?? DECOY_HASH)
    return ok && person !== undefined && person.passwordHash !== null ? person : null
  }

  /**
   * A new session; the cookie value is returned once and stored only as a hash. `device`: the browser
   * and system it comes from, as the account screen shows it.
   */
  async startSession(personId: string, device = ''): Promise<string> {
    const secret = newSecret(SECRET_PREFIXES.session)
    const now = this.clock.now()
    const record: SessionRecord = { v: 1, personId, createdAt: now, seenAt: now, expiresAt: now + SESSION_MAX_MS }
    if (device !== '') record.device = device.slice(0, 120)
    const hash = hashSecret(secret)
    await this.store.commit(() => this.store.sessions.put(hash, record))
    this.#sessions.set(hash, record)
    return secret
  }

  /**
   * The person of a live session, or undefined. One hash and one Map lookup; the last use is
   * written at most every SESSION_TOUCH_MS, off the request's path (never awaited).
   */
  sessionPerson(secret: string): PersonRecord | undefined {
    const hash = hashSecret(secret)
    const session = this.#sessions.get(hash)
    if (session === undefined) return undefined
    const now = this.clock.now()
    if (!sessionLive(session, now)) {
      this.#sessions.delete(hash)
      void this.store.commit(() => this.store.sessions.remove(hash))
      return undefined
    }
    if (now - session.seenAt > SESSION_TOUCH_MS) {
      const touched = { ...session, seenAt: now }
      this.#sessions.set(hash, touched)
      void this.store.commit(() => {
        if (this.store.sessions.get(hash) !== undefined) this.store.sessions.put(hash, touched)
      })
    }
    return this.#persons.get(session.personId)
  }

  /**
   * Removes sessions past their idle or absolute expiry and setup codes past theirs, from the store and
   * from memory (a session that is never presented again would otherwise stay for good). Returns how
   * many records went.
   */
  async sweepExpired(): Promise<number> {
    const { store } = this
    const now = this.clock.now()
    const sessions: string[] = []
    const codes: string[] = []
    for (const { key, value } of store.sessions.range({ start: '', end: '\uffff' }))
      if (!sessionLive(value, now)) sessions.push(key as string)
    for (const { key, value } of store.oneTime.range({ start: '', end: '\uffff' })) if (value.expiresAt <= now) codes.push(key as string)
    if (sessions.length + codes.length === 0) return 0
    await store.commit(() => {
      for (const hash of sessions) store.sessions.remove(hash)
      for (const hash of codes) store.oneTime.remove(hash)
    })
    for (const hash of sessions) this.#sessions.delete(hash)
    return sessions.length + codes.length
  }

  /** The person's live sessions, by the hash of their cookies. */
  sessionsOf(personId: string): { hash: string; session: SessionRecord }[] {
    const now = this.clock.now()
    const out: { hash: string; session: SessionRecord }[] = []
    for (const [hash, session] of this.#sessions)
      if (session.personId === personId && sessionLive(session, now)) out.push({ hash, session })
    return out
  }

  /** Signs a session out: its cookie stops working at once. */
  async endSession(secret: string): Promise<void> {
    await this.endSessionByHash(hashSecret(secret))
  }

  /** Signs a session out by the hash of its cookie (the account screen's list). */
  async endSessionByHash(hash: string): Promise<void> {
    this.#sessions.delete(hash)
    await this.store.commit(() => this.store.sessions.remove(hash))
  }

  // Memberships and collaborations (written by Teams; mirrored here)

  /** The person's role in the organization, or undefined when they are not a member. */
  role(personId: string, orgId: string): PersonRole | undefined {
    return this.#roles.get(personId)?.get(orgId)
  }

  /** The person's collaboration on a website, or undefined. */
  collaboration(personId: string, websiteId: string): CollaboratorRecord | undefined {
    return this.#collaborations.get(personId)?.get(websiteId)
  }

  /** Websites the person collaborates on. */
  collaborations(personId: string): CollaboratorRecord[] {
    return [...(this.#collaborations.get(personId)?.values() ?? [])]
  }

  /** The person's organizations, their personal workspace first. */
  workspaces(personId: string): Workspace[] {
    const person = this.#persons.get(personId)
    const out: Workspace[] = []
    for (const [orgId, role] of this.#roles.get(personId) ?? []) {
      const org = this.store.organizations.get(orgId)
      if (org !== undefined) out.push({ id: orgId, name: org.name, role, personal: orgId === person?.personalOrgId })
    }
    return out.sort((a, b) => Number(b.personal) - Number(a.personal) || a.name.localeCompare(b.name))
  }

  /** After a committed membership change. */
  mirrorMembership(personId: string, orgId: string, role: PersonRole | null): void {
    if (role === null) this.#roles.get(personId)?.delete(orgId)
    else this.#setRole(personId, orgId, role)
  }

  /** After a committed collaboration change. */
  mirrorCollaboration(record: CollaboratorRecord, present: boolean): void {
    if (present) this.#setCollaboration(record)
    else this.#collaborations.get(record.personId)?.delete(record.websiteId)
  }

  #setRole(personId: string, orgId: string, role: PersonRole): void {
    let roles = this.#roles.get(personId)
    if (roles === undefined) this.#roles.set(personId, (roles = new Map()))
    roles.set(orgId, role)
  }

  #setCollaboration(record: CollaboratorRecord): void {
    let map = this.#collaborations.get(record.personId)
    if (map === undefined) this.#collaborations.set(record.personId, (map = new Map()))
    map.set(record.websiteId, record)
  }
}

function sessionLive(session: SessionRecord, now: number): boolean {
  return session.expiresAt > now && session.seenAt + SESSION_IDLE_MS > now
}

/** A one-time setup code for the person (valid 24 hours), returned once and stored as a hash; only inside `store.commit`. */
export function insertSetupCode(store: IdentityStore, personId: string, now: number): string {
  const code = newSecret(SECRET_PREFIXES.setup)
  store.oneTime.put(hashSecret(code), { v: 1, kind: 'setup', personId, expiresAt: now + SETUP_LINK_MS })
  return code
}

/** Writes a membership and its index; only inside `store.commit`. */
/** The owner person of the installation's organization, and a setup code; inside `store.commit`. */
export function insertOwnerPerson(store: IdentityStore, ownerId: string, orgId: string, now: number): string {
  store.persons.put(ownerId, {
    v: 1,
    id: ownerId,
    email: null,
    name: 'Owner',
    passwordHash: null,
    personalOrgId: orgId,
    createdAt: now,
    updatedAt: now,
  })
  insertMembership(store, orgId, ownerId, 'owner', now)
  return insertSetupCode(store, ownerId, now)
}

export function insertMembership(store: IdentityStore, orgId: string, personId: string, role: PersonRole, now: number): MembershipRecord {
  const record: MembershipRecord = { v: 1, orgId, personId, role, seq: store.nextSeq(), createdAt: now }
  store.memberships.put([orgId, personId], record)
  store.membershipsByPerson.put([personId, orgId], orgId)
  return record
}
