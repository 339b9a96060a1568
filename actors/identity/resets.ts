// "Forgot your password?": a single-use link by mail, valid 30 minutes, the same answer whether or not the address has an account.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newSecret } from '../../core/ids.js'
import type { Logger } from '../../core/log.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import type { Mail } from '../mail/mail.js'
import { passwordReset } from '../mail/templates.js'
import { appendAudit } from '../organization/audit.js'
import type { People } from './people.js'
import type { IdentityStore } from './tables.js'

/** How long a reset link works (OWASP: short-lived). */
export const RESET_LINK_MS = 30 * 60_000
/** The token's prefix; 32 random bytes after it (256 bits). */
const RESET_PREFIX = 'rst_'

/**
 * Password resets: `request` queues the mail in the same commit as the token (stored only as its
 * hash), and is run off the request's path so an address with an account and one without are
 * answered alike and in about the same time; `reset` spends the token once, sets the new password
 * (the sign-up rules), ends every session of the person, and records `person.password_reset` in
 * their personal workspace's audit log.
 */
export class PasswordResets {
  constructor(
    private readonly store: IdentityStore,
    private readonly clock: Clock,
    private readonly people: People,
    private readonly mail: Mail,
    private readonly log: Logger,
  ) {}

  /**
   * Asks for a reset link for the address. Never says whether it has an account: the caller answers
   * before this ends (a refusal by the mail limits is logged, not shown).
   */
  async request(email: string): Promise<void> {
    const person = this.people.personByEmail(email)
    if (person === undefined || person.email === null || person.passwordHash === null) return
    try {
      this.mail.outbox.checkLimits([person.email], null)
    } catch {
      this.log.warn('a password reset was not sent: the address is past its mail limits', { personId: person.id })
      return
    }
    const token = newSecret(RESET_PREFIX)
    const expiresAt = this.clock.now() + RESET_LINK_MS
    const composed = passwordReset(this.mail.server(), person.email, this.mail.link(`/reset#token=${token}`), RESET_LINK_MS / 60_000)
    await this.people.mailbox.run(() =>
      this.store.commit(() => {
        this.store.oneTime.put(hashSecret(token), { v: 1, kind: 'reset', personId: person.id, expiresAt })
        this.mail.outbox.queue({ kind: 'password_reset', organizationId: null, to: person.email!, ...composed })
      }),
    )
  }

  /** Whether a reset link still works (its page says so when opened). */
  check(token: string): { valid: boolean; expiresAt: number | null } {
    const record = token === '' ? undefined : this.store.oneTime.get(hashSecret(token))
    if (record === undefined || record.kind !== 'reset' || record.expiresAt <= this.clock.now()) return { valid: false, expiresAt: null }
    return { valid: true, expiresAt: record.expiresAt }
  }

  /** Spends the token: the new password is set and every session of the person ends. */
  async reset(token: string, password: string): Promise<PersonRecord> {
    const hash = hashSecret(token)
    const record = token === '' ? undefined : this.store.oneTime.get(hash)
    if (record === undefined || record.kind !== 'reset' || record.expiresAt <= this.clock.now())
      throw new ApiError(
        'not_found',
        'This reset link is unknown, used or expired (a link works once, for 30 minutes): ask for a new one on the sign-in page, "Forgot your password?"',
        { reason: 'link_expired' },
      )
    const person = await this.people.updatePerson(record.personId, { password })
    await this.people.mailbox.run(() =>
      this.store.commit(() => {
        this.store.oneTime.remove(hash)
        appendAudit(this.store, person.personalOrgId, { kind: 'user', id: person.id, name: person.name }, this.clock.now(), {
          eventType: 'person.password_reset',
          resourceType: 'person',
          resourceId: person.id,
          websiteId: null,
        })
      }),
    )
    return person
  }
}
