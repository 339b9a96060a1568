// The account screen's changes a person makes to themselves: name, password, email (confirmed by a
// link to the new address), their sessions, and the workspace a sign-in lands in.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newSecret } from '../../core/ids.js'
import type { AuditEventType } from '../../core/schemas/audit.js'
import type { PersonRecord, SessionRecord } from '../../core/schemas/identity.js'
import type { Mail } from '../mail/mail.js'
import { emailChange, emailChanged } from '../mail/templates.js'
import { appendAudit } from '../organization/audit.js'
import { checkEmail, emailKey, type People } from './people.js'
import { passwordMatches } from './password.js'
import type { IdentityStore } from './tables.js'

/** How long the link confirming a new email address works. */
export const EMAIL_LINK_MS = 24 * 3600_000
/** The token's prefix; 32 random bytes after it. */
const EMAIL_PREFIX = 'eml_'

/** A session as its person sees it on the account screen. */
export interface SessionView {
  id: string
  device: string | null
  createdAt: number
  seenAt: number
  expiresAt: number
  current: boolean
}

/** The public id of a session: derived from the hash of its cookie (the cookie itself is never shown). */
export function sessionId(hash: string): string {
  return `ses_${hash.slice(0, 20)}`
}

/**
 * Changes a person makes to their own account. The password and the email need the current password
 * (a session left open on a shared machine cannot take the account over); a new email is used only
 * once a link sent to it is opened, and the old address is told at once.
 */
export class Account {
  constructor(
    private readonly store: IdentityStore,
    private readonly clock: Clock,
    private readonly people: People,
    private readonly mail: Mail,
  ) {}

  /** A person by id, or a 404 (one deleted meanwhile). */
  #person(personId: string): PersonRecord {
    const person = this.people.person(personId)
    if (person === undefined) throw new ApiError('not_found', `Person ${personId} not found`)
    return person
  }

  /** The current password, or a 400 naming `currentPassword` (the account is not changed). */
  async #checkPassword(person: PersonRecord, password: string): Promise<void> {
    if (person.passwordHash === null || !(await passwordMatches(password, person.passwordHash)))
      throw new ApiError('validation', 'body.currentPassword is not your current password; nothing was changed', {
        field: 'body.currentPassword',
      })
  }

  rename(personId: string, name: string): Promise<PersonRecord> {
    if (name.trim() === '') throw new ApiError('validation', 'name must not be empty', { field: 'body.name' })
    return this.people.updatePerson(personId, { name })
  }

  /** A new password: every other session of the person ends, `keepSession` (this one's hash) stays. */
  async changePassword(personId: string, current: string, next: string, keepSession: string | null): Promise<PersonRecord> {
    const person = this.#person(personId)
    await this.#checkPassword(person, current)
    const changed = await this.people.updatePerson(personId, { password: next }, keepSession)
    await this.#audit(changed, 'person.password_changed')
    return changed
  }

  /**
   * Asks to sign in with another address: a link to confirm it goes to the new address (in the same
   * commit as the request), a notice to the old one. The old address stays until the link is opened.
   */
  async requestEmailChange(personId: string, email: string, password: string): Promise<{ email: string; expiresAt: number }> {
    const address = checkEmail(email, 'body.email')
    const person = this.#person(personId)
    await this.#checkPassword(person, password)
    if (emailKey(address) === emailKey(person.email ?? ''))
      throw new ApiError('validation', `body.email is already the address you sign in with (${address})`, { field: 'body.email' })
    const owner = this.people.personByEmail(address)
    if (owner !== undefined && owner.id !== personId)
      throw new ApiError('conflict', `body.email is the address of another person (${address}); choose another`, { field: 'body.email' })
    const recipients = person.email === null ? [address] : [address, person.email]
    this.mail.outbox.checkLimits(recipients, null)
    const token = newSecret(EMAIL_PREFIX)
    const tokenHash = hashSecret(token)
    const expiresAt = this.clock.now() + EMAIL_LINK_MS
    const server = this.mail.server()
    const confirm = emailChange(server, person.name, address, this.mail.link(`/confirm-email#token=${token}`), EMAIL_LINK_MS / 3600_000)
    await this.people.changePerson(personId, (current) => {
      // The older link, if any, stops working: only the latest request can be confirmed.
      if (current.pendingEmail !== undefined) this.store.oneTime.remove(current.pendingEmail.tokenHash)
      this.store.oneTime.put(tokenHash, { v: 1, kind: 'email', personId, expiresAt })
      this.mail.outbox.queue({ kind: 'email_change', organizationId: null, to: address, ...confirm })
      if (current.email !== null)
        this.mail.outbox.queue({
          kind: 'email_changed',
          organizationId: null,
          to: current.email,
          ...emailChanged(server, current.email, address),
        })
      return { ...current, pendingEmail: { email: address, tokenHash, expiresAt }, updatedAt: this.clock.now() }
    })
    return { email: address, expiresAt }
  }

  /** Whether an email confirmation link still works, and for which address (its page says so). */
  emailLink(token: string): { valid: boolean; email: string | null } {
    const found = this.#pending(token)
    return found === null ? { valid: false, email: null } : { valid: true, email: found.email }
  }

  #pending(token: string): { person: PersonRecord; email: string } | null {
    if (token === '') return null
    const hash = hashSecret(token)
    const record = this.store.oneTime.get(hash)
    if (record === undefined || record.kind !== 'email' || record.expiresAt <= this.clock.now()) return null
    const person = this.people.person(record.personId)
    const pending = person?.pendingEmail
    if (person === undefined || pending === undefined || pending.tokenHash !== hash) return null
    return { person, email: pending.email }
  }

  /** Opens the link: the new address becomes the one the person signs in with. */
  async confirmEmail(token: string): Promise<PersonRecord> {
    const found = this.#pending(token)
    if (found === null)
      throw new ApiError(
        'not_found',
        'This confirmation link is unknown, used, replaced by a newer one or expired (a link works for 24 hours): ask again on the account screen',
        { reason: 'link_expired' },
      )
    const changed = await this.people.updatePerson(found.person.id, { email: found.email })
    await this.people.mailbox.run(() =>
      this.store.commit(() => {
        this.store.oneTime.remove(hashSecret(token))
        this.#appendAudit(changed, 'person.email_changed')
      }),
    )
    return changed
  }

  /** The person's live sessions, the newest first; `current` marks the one asking. */
  sessions(personId: string, current: string | null): SessionView[] {
    return this.people
      .sessionsOf(personId)
      .map(({ hash, session }) => view(hash, session, current))
      .sort((a, b) => b.createdAt - a.createdAt)
  }

  /** Signs one of the person's sessions out by its public id. */
  async endSession(personId: string, id: string): Promise<SessionView> {
    const found = this.people.sessionsOf(personId).find(({ hash }) => sessionId(hash) === id)
    if (found === undefined)
      throw new ApiError('not_found', `You have no session ${id} (signed out or expired); GET /v1/me/sessions lists them`)
    await this.people.endSessionByHash(found.hash)
    return view(found.hash, found.session, null)
  }

  /** Remembers the workspace the person acts in on the dashboard, so the next sign-in lands there. */
  async setLastWorkspace(personId: string, orgId: string | null): Promise<void> {
    const person = this.#person(personId)
    const last = orgId === null || orgId === person.personalOrgId ? undefined : orgId
    if (last === person.lastWorkspaceId) return
    if (last !== undefined && this.people.role(personId, last) === undefined)
      throw new ApiError('not_found', `Organization ${last} not found among your workspaces; GET /v1/me lists them`, {
        field: 'body.lastWorkspaceId',
      })
    await this.people.changePerson(personId, (current) => {
      const next: PersonRecord = { ...current }
      if (last === undefined) delete next.lastWorkspaceId
      else next.lastWorkspaceId = last
      return next
    })
  }

  #audit(person: PersonRecord, eventType: AuditEventType): Promise<void> {
    return this.people.mailbox.run(() => this.store.commit(() => this.#appendAudit(person, eventType)))
  }

  #appendAudit(person: PersonRecord, eventType: AuditEventType): void {
    appendAudit(this.store, person.personalOrgId, { kind: 'user', id: person.id, name: person.name }, this.clock.now(), {
      eventType,
      resourceType: 'person',
      resourceId: person.id,
      websiteId: null,
    })
  }
}

function view(hash: string, session: SessionRecord, current: string | null): SessionView {
  return {
    id: sessionId(hash),
    device: session.device ?? null,
    createdAt: session.createdAt,
    seenAt: session.seenAt,
    expiresAt: session.expiresAt,
    current: hash === current,
  }
}
