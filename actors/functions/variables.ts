// A website's function variables and secrets: plain values, or secrets sealed at rest and never shown back; what `env` holds.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { FunctionVariableRecord } from '../../core/schemas/functions.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import { appendAudit } from '../organization/audit.js'
import type { Mailboxes } from '../mailboxes.js'
import type { FunctionsStore } from './tables.js'

/** Cloudflare's limits: 64 variables a site, names as identifiers, values up to 5 KiB. */
export const VARIABLES_MAX = 64
export const VARIABLE_VALUE_MAX_BYTES = 5 * 1024
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
/** Names the platform binds itself. */
const RESERVED = new Set(['ASSETS', 'KV'])

/** A variable as the API shows it: a secret's value never. */
export interface VariableView {
  name: string
  secret: boolean
  value: string | null
  updatedAt: number
}

/**
 * The variables and secrets of each website's functions, set in the website's lane (audited, the
 * secret's value in no log and no audit entry). `env` opens the secrets for one request; the cost is
 * one AES-GCM open each, a few microseconds.
 */
export class FunctionVariables {
  constructor(
    private readonly store: FunctionsStore,
    private readonly clock: Clock,
    private readonly lanes: Mailboxes,
    private readonly key: Buffer,
  ) {}

  list(websiteId: string): VariableView[] {
    const out: VariableView[] = []
    for (const { value } of this.store.functionVariables.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] }))
      out.push({ name: value.name, secret: value.secret, value: value.secret ? null : value.value, updatedAt: value.updatedAt })
    return out
  }

  /** What the website's functions read as `env` (plain values and opened secrets), and the secrets' values (kept out of its logs). */
  env(websiteId: string): { env: Record<string, string>; secrets: string[] } {
    const env: Record<string, string> = {}
    const secrets: string[] = []
    for (const { value } of this.store.functionVariables.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      env[value.name] = value.secret ? this.#open(value.sealed!) : value.value!
      if (value.secret) secrets.push(env[value.name])
    }
    return { env, secrets }
  }

  /** Sets a variable (a secret when `secret`); a 400 names what is wrong with the name or value. */
  set(website: WebsiteRecord, actor: AuditActorValue, name: string, value: string, secret: boolean): Promise<VariableView> {
    if (!NAME.test(name))
      throw new ApiError('validation', `"${name}" is not a variable name: letters, digits and _, starting with a letter or _, up to 64`, {
        field: 'path.name',
      })
    if (RESERVED.has(name))
      throw new ApiError(
        'validation',
        `${name} is bound by the platform (env.ASSETS: the site's files, env.KV: its key-value store); pick another name`,
        {
          field: 'path.name',
        },
      )
    if (Buffer.byteLength(value) > VARIABLE_VALUE_MAX_BYTES)
      throw new ApiError('validation', `A variable's value is at most ${VARIABLE_VALUE_MAX_BYTES} bytes (5 KiB)`, { field: 'body.value' })
    return this.lanes.run(website.id, async () => {
      const key: [string, string] = [website.id, name]
      const existing = this.store.functionVariables.get(key)
      if (existing === undefined && this.list(website.id).length >= VARIABLES_MAX)
        throw new ApiError('validation', `A website has at most ${VARIABLES_MAX} variables and secrets; delete one first`, {
          field: 'path.name',
        })
      const now = this.clock.now()
      const record: FunctionVariableRecord = {
        v: 1,
        websiteId: website.id,
        name,
        secret,
        value: secret ? null : value,
        sealed: secret ? this.#seal(value) : null,
        updatedAt: now,
      }
      await this.store.commit(() => {
        this.store.functionVariables.put(key, record)
        appendAudit(this.store, website.orgId, actor, now, {
          eventType: 'website.variable_set',
          resourceType: 'website',
          resourceId: website.id,
          websiteId: website.id,
          metadata: { name, secret },
        })
      })
      return { name, secret, value: secret ? null : value, updatedAt: now }
    })
  }

  /** Removes a variable; a 404 when there is none of that name. */
  remove(website: WebsiteRecord, actor: AuditActorValue, name: string): Promise<void> {
    return this.lanes.run(website.id, async () => {
      const key: [string, string] = [website.id, name]
      const existing = this.store.functionVariables.get(key)
      if (existing === undefined)
        throw new ApiError('not_found', `The website has no variable or secret named ${name}; list them with list_function_variables`)
      const now = this.clock.now()
      await this.store.commit(() => {
        this.store.functionVariables.remove(key)
        appendAudit(this.store, website.orgId, actor, now, {
          eventType: 'website.variable_removed',
          resourceType: 'website',
          resourceId: website.id,
          websiteId: website.id,
          metadata: { name, secret: existing.secret },
        })
      })
    })
  }

  /** Inside a website's purge commit. */
  removeWebsite(websiteId: string): void {
    for (const { key } of this.store.functionVariables.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] }))
      this.store.functionVariables.remove(key as [string, string])
  }

  #seal(value: string): string {
    const nonce = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce)
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()])
    return Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64url')
  }

  #open(sealed: string): string {
    const bytes = Buffer.from(sealed, 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, 12))
    decipher.setAuthTag(bytes.subarray(12, 28))
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
  }
}
