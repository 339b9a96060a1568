import { createHmac } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { iso } from '../../core/clock.js'
import { sha256 } from '../../core/content.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import { FORM_FILES_QUOTA_DEFAULT } from '../../core/limits.js'
import type { FormStatsRecord, SubmissionFile, SubmissionRecord, WebhookDeliveryRecord } from '../../core/schemas/forms.js'
import type { FormConfig } from '../../core/schemas/records.js'
import type { FormsStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'
import type { FormNotifications } from './notifications.js'

/** What the form endpoint hands over: fields, files with their bytes, and how it was sent. */
export interface SubmissionInput {
  websiteId: string
  websiteName: string
  /** The website's organization (its mail limits count a notification). */
  orgId: string
  form: string
  data: Record<string, string | string[]>
  files: (Omit<SubmissionFile, 'hash' | 'size'> & { bytes: Buffer })[]
  spam: boolean
  draft: boolean
  /** The form's configuration when the site declares it (its webhook gets kept submissions). */
  config: FormConfig | null
}

export interface SubmissionPage {
  items: SubmissionRecord[]
  nextCursor: string | null
}

/**
 * Form submissions of websites (spec: Forms): durable before the answer, counted per form, files
 * stored as content-addressed blobs. A kept (not spam) submission of a form with a webhook enters
 * the durable outbox in the same transaction; the deliverer (actors/webhooks.ts) sends it later.
 */
export class Forms {
  constructor(
    private readonly store: FormsStore,
    private readonly clock: Clock,
    /** Websites' lanes: the owner's commands (marking, deleting, rotating) run in the website's. */
    private readonly lanes: Mailboxes,
    /** The installation's secret, from which each website's webhook signing secret is derived. */
    private readonly signingKey: Buffer,
    /** Notifications by mail, queued in each kept submission's commit. */
    readonly notifications: FormNotifications,
    /** Bytes of submission files a website may keep (PLINTH_FORM_FILES_BYTES). */
    private readonly filesQuota = FORM_FILES_QUOTA_DEFAULT,
  ) {}

  /**
   * The secret a website's webhooks are signed with: derived from the installation key and a
   * generation number, so it is never stored; rotating bumps the generation.
   */
  webhookSecret(websiteId: string): string {
    const generation = this.store.webhookSecrets.get(websiteId)?.generation ?? 0
    return `whsec_${createHmac('sha256', this.signingKey).update(`webhook:${websiteId}:${generation}`).digest('base64url')}`
  }

  /** A new webhook secret for the website (the old one stops verifying); also after a transfer. */
  rotateWebhookSecret(websiteId: string): Promise<string> {
    return this.lanes.run(websiteId, async () => {
      const now = this.clock.now()
      await this.store.commit(() => {
        const current = this.store.webhookSecrets.get(websiteId)
        this.store.webhookSecrets.put(websiteId, { v: 1, websiteId, generation: (current?.generation ?? 0) + 1, rotatedAt: now })
      })
      return this.webhookSecret(websiteId)
    })
  }

  async submit(input: SubmissionInput): Promise<SubmissionRecord> {
    const { store, clock } = this
    const now = clock.now()
    const files: SubmissionFile[] = input.files.map((f) => ({
      field: f.field,
      filename: f.filename,
      contentType: f.contentType,
      size: f.bytes.length,
      hash: sha256(f.bytes),
    }))
    const webhook = !input.spam && input.config?.webhook !== undefined ? input.config.webhook : null
    const fileBytes = files.reduce((sum, f) => sum + f.size, 0)
    return store.commit(() => {
      if (fileBytes > 0) {
        const used = store.formFileBytes.get([input.websiteId])
        if (used + fileBytes > this.filesQuota) {
          throw new ApiError(
            'payload_too_large',
            `This site's form submissions already keep ${used} bytes of files, and it may keep ${this.filesQuota}; the owner can delete old submissions to make room`,
            { limitBytes: this.filesQuota, usedBytes: used },
          )
        }
        store.formFileBytes.add([input.websiteId], fileBytes)
      }
      const seq = store.nextSeq()
      const record: SubmissionRecord = {
        v: 1,
        id: newId('sub'),
        websiteId: input.websiteId,
        form: input.form,
        seq,
        data: input.data,
        files,
        spam: input.spam,
        read: false,
        draft: input.draft,
        createdAt: now,
        webhook: webhook === null ? 'none' : 'pending',
        deliveries: [],
      }
      input.files.forEach((f, i) => store.putBlob(files[i].hash, f.bytes))
      store.putSubmission(record)
      store.submissionsByForm.put([input.websiteId, input.form, seq], record.id)
      store.submissionsBySpam.put([input.websiteId, input.form, input.spam ? 1 : 0, seq], record.id)
      const stats = store.formStats.get([input.websiteId, input.form]) ?? {
        v: 1,
        websiteId: input.websiteId,
        form: input.form,
        submissions: 0,
        spam: 0,
        lastSubmissionAt: null,
      }
      store.formStats.put(
        [input.websiteId, input.form],
        input.spam ? { ...stats, spam: stats.spam + 1 } : { ...stats, submissions: stats.submissions + 1, lastSubmissionAt: now },
      )
      if (webhook !== null) {
        const delivery: WebhookDeliveryRecord = {
          v: 1,
          // One delivery per submission, under the submission's id: found without a scan.
          id: record.id,
          submissionId: record.id,
          websiteId: input.websiteId,
          url: webhook,
          body: JSON.stringify({
            form: input.form,
            website: { id: input.websiteId, name: input.websiteName },
            submission: submissionPayload(record),
          }),
          createdAt: now,
          attempts: 0,
          nextAttemptAt: now,
        }
        store.webhookDeliveries.put(delivery.id, delivery)
        store.webhooksDue.put([now, delivery.id], delivery.id)
      }
      this.notifications.onSubmission(record, { id: input.websiteId, orgId: input.orgId, name: input.websiteName })
      return record
    })
  }

  /** The forms that have submissions, with their counts. */
  stats(websiteId: string): FormStatsRecord[] {
    return [...this.store.formStats.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })].map((e) => e.value)
  }

  /** A form's submissions, newest first; `spam` filters. */
  list(websiteId: string, form: string, options: { spam?: boolean; limit: number; cursor?: string }): SubmissionPage {
    const below = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : Number(options.cursor)
    if (!Number.isSafeInteger(below) || below < 0)
      throw new ApiError('validation', 'cursor is not one this list gave out; start again without it', { field: 'query.cursor' })
    const items: SubmissionRecord[] = []
    let nextCursor: string | null = null
    // With a spam filter, the index of that flag: only matching rows are read.
    const rows =
      options.spam === undefined
        ? this.store.submissionsByForm.range({ start: [websiteId, form, below - 1], end: [websiteId, form, 0], reverse: true })
        : this.store.submissionsBySpam.range({
            start: [websiteId, form, options.spam ? 1 : 0, below - 1],
            end: [websiteId, form, options.spam ? 1 : 0, 0],
            reverse: true,
          })
    for (const { value } of rows) {
      const record = this.store.formSubmissions.get(value)
      if (record === undefined) continue
      if (items.length === options.limit) {
        nextCursor = String(record.seq + 1)
        break
      }
      items.push(record)
    }
    return { items, nextCursor }
  }

  get(websiteId: string, form: string, id: string): SubmissionRecord {
    const record = this.store.formSubmissions.get(id)
    if (record === undefined || record.websiteId !== websiteId || record.form !== form)
      throw new ApiError('not_found', `Submission ${id} not found in form ${form}`)
    return record
  }

  /** Marks a submission spam or not (counts follow) and read or unread. */
  update(websiteId: string, form: string, id: string, change: { spam?: boolean; read?: boolean }): Promise<SubmissionRecord> {
    const { store } = this
    return this.lanes.run(websiteId, () =>
      store.commit(() => {
        const current = this.get(websiteId, form, id)
        const next = {
          ...current,
          ...(change.spam === undefined ? {} : { spam: change.spam }),
          ...(change.read === undefined ? {} : { read: change.read }),
        }
        // Marked spam: a webhook still waiting never sends it.
        if (next.spam && !current.spam) this.#dropDeliveries(id)
        if (next.spam !== current.spam) {
          store.submissionsBySpam.remove([websiteId, form, current.spam ? 1 : 0, current.seq])
          store.submissionsBySpam.put([websiteId, form, next.spam ? 1 : 0, current.seq], id)
          const stats = store.formStats.get([websiteId, form])!
          const delta = next.spam ? 1 : -1
          store.formStats.put([websiteId, form], { ...stats, spam: stats.spam + delta, submissions: stats.submissions - delta })
        }
        store.putSubmission(next)
        return next
      }),
    )
  }

  remove(websiteId: string, form: string, id: string): Promise<void> {
    const { store } = this
    return this.lanes.run(websiteId, () =>
      store.commit(() => {
        const current = this.get(websiteId, form, id)
        this.#dropDeliveries(id)
        const bytes = current.files.reduce((sum, f) => sum + f.size, 0)
        if (bytes > 0) store.formFileBytes.add([websiteId], -bytes)
        store.removeSubmission(id)
        store.submissionsByForm.remove([websiteId, form, current.seq])
        store.submissionsBySpam.remove([websiteId, form, current.spam ? 1 : 0, current.seq])
        const stats = store.formStats.get([websiteId, form])
        if (stats !== undefined)
          store.formStats.put(
            [websiteId, form],
            current.spam ? { ...stats, spam: Math.max(0, stats.spam - 1) } : { ...stats, submissions: Math.max(0, stats.submissions - 1) },
          )
      }),
    )
  }

  /** Removes every submission, count and pending webhook of a website (it is being purged); inside the purge's commit. */
  removeWebsite(websiteId: string): void {
    const { store } = this
    {
      for (const { key, value } of store.submissionsByForm.range({ start: [websiteId, '', 0], end: [websiteId, '\uffff', 0] })) {
        this.#dropDeliveries(value)
        store.removeSubmission(value)
        store.submissionsByForm.remove(key)
      }
      for (const { key } of store.submissionsBySpam.range({ start: [websiteId, '', 0, 0], end: [websiteId, '\uffff', 0, 0] }))
        store.submissionsBySpam.remove(key)
      for (const { key } of store.formStats.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) store.formStats.remove(key)
      store.formFileBytes.add([websiteId], -store.formFileBytes.get([websiteId]))
      this.notifications.removeWebsite(websiteId)
    }
  }

  /** Removes a submission's pending webhook delivery, if any (inside a commit). */
  #dropDeliveries(submissionId: string): void {
    const { store } = this
    const delivery = store.webhookDeliveries.get(submissionId)
    if (delivery === undefined) return
    store.webhookDeliveries.remove(submissionId)
    store.webhooksDue.remove([delivery.nextAttemptAt, delivery.id])
  }

  /** The bytes of a submission's file. */
  fileBytes(record: SubmissionRecord, index: number): Buffer | undefined {
    const file = record.files[index]
    return file === undefined ? undefined : this.store.getBlob(file.hash)
  }
}

/** A submission as the API and webhooks show it. */
export function submissionPayload(record: SubmissionRecord) {
  return {
    id: record.id,
    form: record.form,
    data: record.data,
    files: record.files.map(({ field, filename, contentType, size }) => ({ field, filename, contentType, size })),
    spam: record.spam,
    read: record.read,
    draft: record.draft,
    createdAt: iso(record.createdAt),
  }
}
