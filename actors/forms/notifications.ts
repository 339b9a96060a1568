// A form's submissions by mail: who receives them (members at once, other addresses once they confirm), a
// message per submission, a digest past the per-minute number, and one-click unsubscribe.
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newSecret } from '../../core/ids.js'
import { FORM_DIGEST_RETRY_MS, FORM_NOTIFY_CONFIRM_MS, FORM_NOTIFY_PER_MINUTE, FORM_NOTIFY_RECIPIENTS_MAX } from '../../core/limits.js'
import type { NotifyRecipient, SubmissionRecord } from '../../core/schemas/forms.js'
import { checkEmail, emailKey, isEmail, type People } from '../identity/people.js'
import type { Mail } from '../mail/mail.js'
import { formDigest, formSubmission, notifyConfirm, type Composed } from '../mail/templates.js'
import type { Mailboxes } from '../mailboxes.js'
import type { FormsStore } from './tables.js'

/** Where a form's notifications go, as its owner sees them. */
export interface NotifyView {
  form: string
  recipients: { email: string; state: 'active' | 'pending' }[]
}

/** The token's prefix of a confirmation link; 32 random bytes after it. */
const CONFIRM_PREFIX = 'nfy_'
const MINUTE = 60_000

/** What an unsubscribe link names: one address off one form of one website. */
interface Unsubscribe {
  websiteId: string
  form: string
  email: string
}

/**
 * Form notifications by mail (the forms concern's tables, the mail outbox's messages queued in the
 * same commit as the submission). An address that is not a member's (or a collaborator's) of the
 * website receives nothing until it opens the link sent to it: a form cannot be turned into a way
 * to mail strangers. Each message carries a one-click unsubscribe (RFC 8058).
 */
export class FormNotifications {
  constructor(
    private readonly store: FormsStore,
    private readonly clock: Clock,
    private readonly lanes: Mailboxes,
    private readonly people: People,
    private readonly mail: Mail,
    /** The installation's signing key: unsubscribe links are MACs of what they name, never stored. */
    private readonly signingKey: Buffer,
  ) {}

  view(websiteId: string, form: string): NotifyView {
    const record = this.store.formNotify.get([websiteId, form])
    return { form, recipients: (record?.recipients ?? []).map((r) => ({ email: r.email, state: r.state })) }
  }

  /**
   * Sets who receives the form's submissions. A member's or collaborator's address is active at once;
   * another gets a confirmation link (again only when its last one expired); an address left out is
   * dropped. `by` names who asked, in the confirmation mail.
   */
  set(website: { id: string; orgId: string; name: string }, form: string, emails: readonly string[], by: string): Promise<NotifyView> {
    if (emails.length > FORM_NOTIFY_RECIPIENTS_MAX)
      throw new ApiError('validation', `body.recipients can hold at most ${FORM_NOTIFY_RECIPIENTS_MAX} addresses`, {
        field: 'body.recipients',
        rule: 'maxItems',
        limit: FORM_NOTIFY_RECIPIENTS_MAX,
      })
    const wanted = [...new Map(emails.map((e, i) => [emailKey(e), checkEmail(e, `body.recipients[${i}]`)])).values()]
    return this.lanes.run(website.id, async () => {
      const now = this.clock.now()
      const current = this.store.formNotify.get([website.id, form])
      const before = new Map((current?.recipients ?? []).map((r) => [emailKey(r.email), r]))
      const confirmations: { email: string; token: string }[] = []
      const recipients: NotifyRecipient[] = wanted.map((email) => {
        const had = before.get(emailKey(email))
        if (had !== undefined && (had.state === 'active' || (had.expiresAt ?? 0) > now)) return had
        if (this.#insider(website, email)) return { email, state: 'active', tokenHash: null, expiresAt: null, addedAt: now }
        const token = newSecret(CONFIRM_PREFIX)
        confirmations.push({ email, token })
        return {
          email,
          state: 'pending',
          tokenHash: hashSecret(token),
          expiresAt: now + FORM_NOTIFY_CONFIRM_MS,
          addedAt: had?.addedAt ?? now,
        }
      })
      if (confirmations.length > 0)
        this.mail.outbox.checkLimits(
          confirmations.map((c) => c.email),
          website.orgId,
        )
      const server = this.mail.server()
      await this.store.commit(() => {
        // The links of addresses dropped (or sent a new one) stop working; new pending ones are found by theirs.
        const kept = new Set(recipients)
        for (const r of current?.recipients ?? []) if (r.tokenHash !== null && !kept.has(r)) this.store.formNotifyTokens.remove(r.tokenHash)
        for (const r of recipients)
          if (r.tokenHash !== null && before.get(emailKey(r.email)) !== r)
            this.store.formNotifyTokens.put(r.tokenHash, JSON.stringify([website.id, form]))
        // The minute's count as it stands now (a submission may have come meanwhile).
        const latest = this.store.formNotify.get([website.id, form])
        this.store.formNotify.put([website.id, form], {
          v: 1,
          websiteId: website.id,
          form,
          recipients,
          windowStart: latest?.windowStart ?? now,
          mailed: latest?.mailed ?? 0,
          held: latest?.held ?? 0,
          digestAt: latest?.digestAt ?? null,
        })
        for (const { email, token } of confirmations) {
          const link = this.mail.link(`/notify-confirm#token=${token}`)
          const composed = notifyConfirm(server, by, website.name, form, link, FORM_NOTIFY_CONFIRM_MS / 86_400_000)
          this.mail.outbox.queue({ kind: 'form_notify_confirm', organizationId: website.orgId, to: email, ...composed })
        }
      })
      return this.view(website.id, form)
    })
  }

  /** A member of the website's organization, or a collaborator on it: their address needs no confirmation. */
  #insider(website: { id: string; orgId: string }, email: string): boolean {
    const person = this.people.personByEmail(email)
    if (person === undefined) return false
    return this.people.role(person.id, website.orgId) !== undefined || this.people.collaboration(person.id, website.id) !== undefined
  }

  /** What a confirmation link confirms (its page says so when it opens), or null when it cannot. */
  confirmation(token: string): { websiteId: string; form: string; email: string } | null {
    if (token === '') return null
    const hash = hashSecret(token)
    const at = this.store.formNotifyTokens.get(hash)
    if (at === undefined) return null
    const [websiteId, form] = JSON.parse(at) as [string, string]
    const recipient = this.store.formNotify.get([websiteId, form])?.recipients.find((r) => r.tokenHash === hash)
    if (recipient === undefined || (recipient.expiresAt ?? 0) <= this.clock.now()) return null
    return { websiteId, form, email: recipient.email }
  }

  /** Opens a confirmation link: the address receives the form's submissions from now on. */
  async confirm(token: string): Promise<{ websiteId: string; form: string; email: string }> {
    const found = this.confirmation(token)
    if (found === null)
      throw new ApiError(
        'not_found',
        'This confirmation link is unknown, used or expired: ask whoever runs the site to add your address again',
        {
          reason: 'link_expired',
        },
      )
    const hash = hashSecret(token)
    await this.lanes.run(found.websiteId, () =>
      this.store.commit(() => {
        const record = this.store.formNotify.get([found.websiteId, found.form])
        if (record === undefined) return
        const recipients = record.recipients.map((r) =>
          r.tokenHash === hash ? { ...r, state: 'active' as const, tokenHash: null, expiresAt: null } : r,
        )
        this.store.formNotify.put([found.websiteId, found.form], { ...record, recipients })
        this.store.formNotifyTokens.remove(hash)
      }),
    )
    return found
  }

  /** The one-click unsubscribe link of an address on a form: a MAC of what it names, so nothing is stored. */
  unsubscribeLink(websiteId: string, form: string, email: string): string {
    const named = Buffer.from(JSON.stringify([websiteId, form, emailKey(email)])).toString('base64url')
    return this.mail.link(`/unsubscribe/${named}.${this.#mac(named)}`)
  }

  #mac(named: string): string {
    return createHmac('sha256', this.signingKey).update(`form-unsubscribe:${named}`).digest('base64url')
  }

  /** What an unsubscribe token names, or null when it is not one this server made. */
  unsubscribeOf(token: string): Unsubscribe | null {
    const [named, mac] = token.split('.')
    if (named === undefined || mac === undefined) return null
    const expected = Buffer.from(this.#mac(named))
    const given = Buffer.from(mac)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
    try {
      const [websiteId, form, email] = JSON.parse(Buffer.from(named, 'base64url').toString('utf8')) as string[]
      return typeof websiteId === 'string' && typeof form === 'string' && typeof email === 'string' ? { websiteId, form, email } : null
    } catch {
      return null
    }
  }

  /** Takes the address off the form's notifications (one click from the message); true when it was on. */
  async unsubscribe(token: string): Promise<Unsubscribe & { removed: boolean }> {
    const named = this.unsubscribeOf(token)
    if (named === null) throw new ApiError('not_found', 'This unsubscribe link is not valid; the message it came in has another')
    const removed = await this.lanes.run(named.websiteId, () =>
      this.store.commit(() => {
        const record = this.store.formNotify.get([named.websiteId, named.form])
        const gone = record?.recipients.find((r) => emailKey(r.email) === named.email)
        if (record === undefined || gone === undefined) return false
        if (gone.tokenHash !== null) this.store.formNotifyTokens.remove(gone.tokenHash)
        this.store.formNotify.put([named.websiteId, named.form], { ...record, recipients: record.recipients.filter((r) => r !== gone) })
        return true
      }),
    )
    return { ...named, removed }
  }

  /**
   * Inside the submission's commit: a message to each active recipient, or (past the per-minute
   * number) one more for the minute's digest. A refusal by the mail limits skips the messages, never
   * the submission.
   */
  onSubmission(record: SubmissionRecord, website: { id: string; orgId: string; name: string }): void {
    if (record.spam) return
    const notify = this.store.formNotify.get([website.id, record.form])
    const active = notify?.recipients.filter((r) => r.state === 'active').map((r) => r.email) ?? []
    if (notify === undefined || active.length === 0) return
    const now = this.clock.now()
    const fresh = now - notify.windowStart >= MINUTE && notify.digestAt === null
    const window = fresh ? { windowStart: now, mailed: 0 } : { windowStart: notify.windowStart, mailed: notify.mailed }
    // Past the minute's number, or past the mail limits (the outbox's per address and workspace): held for the digest, never dropped.
    if (window.mailed >= FORM_NOTIFY_PER_MINUTE || !this.#withinLimits(active, website.orgId)) {
      const digestAt = notify.digestAt ?? Math.max(window.windowStart + MINUTE, now)
      if (notify.digestAt === null) this.store.formDigestsDue.put([digestAt, website.id, record.form], website.id)
      this.store.formNotify.put([website.id, record.form], { ...notify, ...window, held: notify.held + 1, digestAt })
      return
    }
    this.store.formNotify.put([website.id, record.form], { ...notify, ...window, mailed: window.mailed + 1 })
    const fields = Object.entries(record.data).map(([name, value]) => ({ name, value: Array.isArray(value) ? value.join(', ') : value }))
    const from = typeof record.data.email === 'string' ? record.data.email.trim() : ''
    const replyTo = isEmail(from) && !/[<>",]/.test(from) ? from : null
    const manage = this.#manage(website.id, record.form)
    const files = record.files.map((f) => ({ field: f.field, filename: f.filename, link: manage }))
    this.#queue(website.orgId, active, 'form_submission', (email) =>
      formSubmission(
        this.mail.server(),
        website.name,
        record.form,
        fields,
        files,
        manage,
        this.unsubscribeLink(website.id, record.form, email),
        replyTo,
      ),
    )
  }

  /**
   * The chores' pass: each digest due now goes out, and the form's minute starts again. A digest the
   * mail limits refuse waits FORM_DIGEST_RETRY_MS and is tried again, its count growing meanwhile.
   */
  async sendDigests(website: (id: string) => { id: string; orgId: string; name: string } | undefined): Promise<number> {
    const now = this.clock.now()
    const due = [...this.store.formDigestsDue.range({ start: [0, '', ''], end: [now + 1, '', ''] })]
    for (const { key } of due) {
      const [, websiteId, form] = key as [number, string, string]
      await this.lanes.run(websiteId, () =>
        this.store.commit(() => {
          this.store.formDigestsDue.remove(key)
          const notify = this.store.formNotify.get([websiteId, form])
          const site = website(websiteId)
          if (notify === undefined) return
          const active = notify.recipients.filter((r) => r.state === 'active').map((r) => r.email)
          if (site !== undefined && notify.held > 0 && active.length > 0 && !this.#withinLimits(active, site.orgId)) {
            const later = now + FORM_DIGEST_RETRY_MS
            this.store.formDigestsDue.put([later, websiteId, form], websiteId)
            this.store.formNotify.put([websiteId, form], { ...notify, digestAt: later })
            return
          }
          this.store.formNotify.put([websiteId, form], { ...notify, windowStart: now, mailed: 0, held: 0, digestAt: null })
          if (site === undefined || notify.held === 0 || active.length === 0) return
          this.#queue(site.orgId, active, 'form_digest', (email) =>
            formDigest(
              this.mail.server(),
              site.name,
              form,
              notify.held,
              this.#manage(websiteId, form),
              this.unsubscribeLink(websiteId, form, email),
            ),
          )
        }),
      )
    }
    return due.length
  }

  /** Whether the outbox's limits (per address and per workspace) let one more message go to each address. */
  #withinLimits(to: string[], orgId: string): boolean {
    try {
      this.mail.outbox.checkLimits(to, orgId)
      return true
    } catch {
      return false
    }
  }

  /** One message to each address (the limits were checked by the caller, in the same commit). */
  #queue(orgId: string, to: string[], kind: 'form_submission' | 'form_digest', compose: (email: string) => Composed): void {
    for (const email of to) this.mail.outbox.queue({ kind, organizationId: orgId, to: email, ...compose(email) })
  }

  /** The dashboard's page of the form's submissions. */
  #manage(websiteId: string, form: string): string {
    return this.mail.link(`/websites/${websiteId}/forms/${encodeURIComponent(form)}`)
  }

  /** Removes a website's notifications (it is being purged); inside the purge's commit. */
  removeWebsite(websiteId: string): void {
    for (const { key, value } of this.store.formNotify.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      for (const r of value.recipients) if (r.tokenHash !== null) this.store.formNotifyTokens.remove(r.tokenHash)
      if (value.digestAt !== null) this.store.formDigestsDue.remove([value.digestAt, websiteId, value.form])
      this.store.formNotify.remove(key)
    }
  }
}
