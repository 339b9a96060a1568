import type busboy from 'busboy'
import type { Registry } from '../../actors/registry.js'
import type { Channel, Snapshot } from '../../actors/website/snapshot.js'
import { ApiError } from '../../core/errors.js'
import { FORM_BODY_MAX_BYTES, FORM_FIELDS_MAX, FORM_FILES_MAX_BYTES, FORM_RATE_LIMITS, FORM_VALUE_MAX_CHARS } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { RateLimiter } from '../../core/rate-limit.js'
import { parseJsonText } from '../../core/json-text.js'
import { errorBody } from '../../core/errors.js'
import type { SubmissionInput } from '../../actors/forms/forms.js'
import { DOOR } from '../../core/metrics.js'
import type { Exchange } from '../uws.js'
import { multipartReader } from '../body.js'
import { networkOf } from '../client-address.js'
import { rateHeaders, rateLimitedError } from '../respond.js'
import type { TakeResult } from '../../core/rate-limit.js'

const FORM_PATH = /^\/_platform\/forms\/([A-Za-z0-9_-]{1,64})\/?$/

/** The name in `/_platform/forms/<name>`, or null when the path is not a form's. */
export function formName(path: string): string | null {
  return FORM_PATH.exec(path)?.[1] ?? null
}

type Fields = Record<string, string | string[]>
interface Parsed {
  fields: Fields
  files: SubmissionInput['files']
}

function add(fields: Fields, name: string, value: string): void {
  const current = fields[name]
  fields[name] = current === undefined ? value : Array.isArray(current) ? [...current, value] : [current, value]
}

function checkCounts(fields: Fields): void {
  if (Object.keys(fields).length > FORM_FIELDS_MAX)
    throw new ApiError('payload_too_large', `A submission has at most ${FORM_FIELDS_MAX} fields`)
  for (const [name, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value])
      if (v.length > FORM_VALUE_MAX_CHARS)
        throw new ApiError('payload_too_large', `Field ${name} is over ${FORM_VALUE_MAX_CHARS} characters`)
  }
}

function parseMultipart(bytes: Buffer, contentType: string): Promise<Parsed> {
  return new Promise((resolve, reject) => {
    const fields: Fields = {}
    const files: Parsed['files'] = []
    let total = 0
    let failed: ApiError | null = null
    let parser: busboy.Busboy
    try {
      parser = multipartReader(contentType, {
        limits: { fields: FORM_FIELDS_MAX, fieldSize: FORM_VALUE_MAX_CHARS, files: 20, fileSize: FORM_FILES_MAX_BYTES },
      })
    } catch {
      reject(new ApiError('validation', 'The multipart body has no boundary; send it as a browser does (multipart/form-data; boundary=…)'))
      return
    }
    const tooMuch = (what: string) => (failed ??= new ApiError('payload_too_large', `A submission has ${what}`))
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) tooMuch(`a field over ${FORM_VALUE_MAX_CHARS} bytes (${name})`)
      add(fields, name, value)
    })
    parser.on('fieldsLimit', () => tooMuch(`more than ${FORM_FIELDS_MAX} fields`))
    parser.on('filesLimit', () => tooMuch('more than 20 files'))
    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => {
        total += chunk.length
        if (total > FORM_FILES_MAX_BYTES)
          failed ??= new ApiError(
            'payload_too_large',
            `The files of a submission add up to more than ${FORM_FILES_MAX_BYTES} bytes (10 MiB)`,
            { limitBytes: FORM_FILES_MAX_BYTES },
          )
        else chunks.push(chunk)
      })
      stream.on('limit', () => tooMuch(`files over ${FORM_FILES_MAX_BYTES} bytes (10 MiB)`))
      stream.on('end', () => {
        // An empty file input sends a part with no name and no bytes: nothing was chosen.
        if (info.filename === undefined || (info.filename === '' && chunks.length === 0)) return
        files.push({
          field,
          filename: info.filename.slice(0, 255),
          contentType: info.mimeType || 'application/octet-stream',
          bytes: Buffer.concat(chunks),
        })
      })
    })
    parser.on('error', () => reject(new ApiError('validation', 'The multipart body is malformed')))
    parser.on('close', () => (failed !== null ? reject(failed) : resolve({ fields, files })))
    parser.end(bytes)
  })
}

function parseBody(bytes: Buffer, contentType: string): Promise<Parsed> | Parsed {
  const type = contentType.split(';')[0].trim().toLowerCase()
  if (type === 'multipart/form-data') return parseMultipart(bytes, contentType)
  if (type === 'application/x-www-form-urlencoded' || type === 'text/plain' || type === '') {
    const fields: Fields = {}
    for (const [name, value] of new URLSearchParams(bytes.toString('utf8'))) add(fields, name, value)
    return { fields, files: [] }
  }
  if (type === 'application/json') {
    const value = parseJsonText(bytes, 'body')
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new ApiError('validation', 'Send the submission as a JSON object of field names to values')
    const fields: Fields = {}
    for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
      for (const item of Array.isArray(raw) ? raw : [raw]) add(fields, name, typeof item === 'string' ? item : JSON.stringify(item))
    }
    return { fields, files: [] }
  }
  throw new ApiError(
    'validation',
    `A form submission is application/x-www-form-urlencoded, multipart/form-data or application/json, not ${type}`,
  )
}

/** A same-site path to send the person to (`/thanks`), or null: never another site (no open redirect). */
function sitePath(value: string | undefined): string | null {
  if (value === undefined || !value.startsWith('/') || value.startsWith('//') || /[\s\\]/.test(value)) return null
  return value
}

const THANKS = (title: string, text: string) =>
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><meta name="viewport" content="width=device-width,initial-scale=1">' +
  `<title>${title}</title></head><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem"><h1>${title}</h1><p>${text}</p>` +
  '<p><a href="javascript:history.back()">Back</a></p></body></html>'

/**
 * `POST /_platform/forms/<name>` on a site's hosts (spec: Forms): urlencoded, multipart (files) and
 * JSON; `_honey` filled is spam, answered exactly like a success; `_redirect` (a path of this site) or
 * the form's `redirect` gets a 303; `fields`, when configured, keeps only those. The submission is
 * durable before the answer. Framework sites take only the forms their website_config declares;
 * static sites take any name. Not the serving hot path: it reads a body and waits for a commit.
 */
export class FormEndpoint {
  constructor(
    private readonly registry: Registry,
    private readonly limiter: RateLimiter,
    private readonly clientAddress: (exchange: Exchange) => string,
    private readonly log: Logger,
  ) {}

  handle(exchange: Exchange, channel: Channel, snapshot: Snapshot, name: string): void {
    // Form posts are a door of their own in /metrics (counted and timed), not the hosting plane's page views.
    exchange.enter(DOOR.forms)
    const accept = exchange.header('accept')
    const contentType = exchange.header('content-type')
    const json = /^application\/json\b/i.test(contentType) || (/application\/json/i.test(accept) && !/text\/html/i.test(accept))
    // Every answer says how much is left of the tighter of the network's and the site's buckets (spec: Limits).
    let tightest: TakeResult | undefined
    const answer = (status: number, body: unknown, html: string) =>
      exchange.send(
        status,
        {
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
          'content-type': json ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
          ...rateHeaders(tightest),
        },
        json ? JSON.stringify(body) : html,
      )
    const fail = (error: unknown) => {
      if (exchange.aborted) return
      if (!(error instanceof ApiError))
        this.log.error('form submission failed', {
          websiteId: channel.websiteId,
          form: name,
          error: (error as Error)?.stack ?? String(error),
        })
      const body = errorBody(error)
      const status = error instanceof ApiError ? error.status : 500
      answer(status, body, THANKS('Not sent', body.message.replace(/[<>&]/g, '')))
    }
    try {
      // Per network, as anonymous publishing counts: one IPv6 host holds a whole /64.
      const address = networkOf(this.clientAddress(exchange))
      for (const [key, policy] of [
        [`form:ip:${address}`, FORM_RATE_LIMITS.perAddress],
        [`form:site:${channel.websiteId}`, FORM_RATE_LIMITS.perSite],
      ] as const) {
        const rate = this.limiter.take(key, policy)
        if (tightest === undefined || !rate.allowed || rate.remaining / rate.limit < tightest.remaining / tightest.limit) tightest = rate
        if (!rate.allowed) throw rateLimitedError(rate, 'Too many submissions')
      }
      if (snapshot.forms !== null && !Object.hasOwn(snapshot.forms, name)) {
        throw new ApiError(
          'not_found',
          `This site has no form named ${name}; its website_config.forms declares ${Object.keys(snapshot.forms).join(', ') || 'none'}`,
        )
      }
    } catch (error) {
      fail(error)
      return
    }
    const config = snapshot.forms !== null && Object.hasOwn(snapshot.forms, name) ? snapshot.forms[name] : null
    exchange.detach()
    exchange
      .readBody(FORM_BODY_MAX_BYTES)
      .then((bytes) => parseBody(bytes, contentType))
      .then(async ({ fields, files }) => {
        checkCounts(fields)
        const honey = fields._honey
        const spam = honey !== undefined && (Array.isArray(honey) ? honey.some((v) => v !== '') : honey !== '')
        const redirect = sitePath(typeof fields._redirect === 'string' ? fields._redirect : undefined) ?? sitePath(config?.redirect)
        const kept: Fields = {}
        for (const [field, value] of Object.entries(fields)) {
          if (field === '_honey' || field === '_redirect') continue
          if (config?.fields !== undefined && !config.fields.includes(field)) continue
          kept[field] = value
        }
        // Spam keeps its fields (to be reviewed) but never its files: a bot cannot fill the disk.
        const keptFiles = spam ? [] : config?.fields === undefined ? files : files.filter((f) => config.fields!.includes(f.field))
        const website = this.registry.website(channel.websiteId)
        if (website === undefined) throw new ApiError('not_found', 'There is no published site at this address')
        await this.registry.forms.submit({
          websiteId: channel.websiteId,
          websiteName: website.record.name,
          orgId: website.record.orgId,
          form: name,
          data: kept,
          files: keptFiles,
          spam,
          draft: channel.kind === 'draft',
          config,
        })
        if (redirect !== null) return exchange.send(303, { location: redirect, 'cache-control': 'no-store', ...rateHeaders(tightest) })
        answer(200, { ok: true, message: 'Thank you: your submission was received.' }, THANKS('Thank you', 'Your submission was received.'))
      })
      .catch(fail)
  }
}
