// Outgoing mail's settings (PLINTH_SMTP_URL, PLINTH_MAIL_FROM, PLINTH_DKIM_*, PLINTH_MAIL_LIMITS), read from the environment.
import { createPrivateKey } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ConfigError, isLoopbackHost, read, type Env } from './config-values.js'

/** The relay Plinth hands its mail to. Its password is behind a function: the configuration can be printed, the password never. */
export interface SmtpConfig {
  readonly host: string
  readonly port: number
  /** smtps://: TLS from the first byte (usually port 465). */
  readonly implicitTls: boolean
  /** smtp://: STARTTLS required (the default), tried when offered (`?starttls=optional`), or never (`?starttls=off`, a relay on this machine). */
  readonly starttls: 'required' | 'optional' | 'off'
  /** A CA file the relay's certificate must chain to (PLINTH_SMTP_CA_FILE), for a private CA; null: the system's. */
  readonly caFile: string | null
  /** The user and password of the URL, or null (a relay that takes mail from this host without them). */
  readonly credentials: () => { user: string; pass: string } | null
  /** The URL as it may be shown: no password. */
  readonly display: string
}

export interface DkimConfig {
  readonly domainName: string
  readonly keySelector: string
  /** The private key (PEM) read from PLINTH_DKIM_KEY_FILE, behind a function like the SMTP password. */
  readonly privateKey: () => string
}

/** How many messages one address, and one organization, may be sent in an hour and in a day. */
export interface MailLimits {
  readonly perAddressHour: number
  readonly perAddressDay: number
  readonly perOrganizationHour: number
  readonly perOrganizationDay: number
}

export interface MailConfig {
  /** null: no relay; messages wait in the outbox for the operator (`plinth mail list`, `plinth mail show`). */
  readonly smtp: SmtpConfig | null
  /** The From of every message: `Plinth <no-reply@example.com>` or a bare address; null: `no-reply@` the API's host. */
  readonly from: string | null
  readonly dkim: DkimConfig | null
  readonly limits: MailLimits
}

export const MAIL_LIMITS_DEFAULT: MailLimits = Object.freeze({
  perAddressHour: 10,
  perAddressDay: 50,
  perOrganizationHour: 200,
  perOrganizationDay: 1000,
})

const ADDRESS = /^[^\s@<>"]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/i

/** `Name <address>` or a bare address, as PLINTH_MAIL_FROM takes it; the address it names, or null. */
export function fromAddress(text: string): string | null {
  const angled = /^\s*(?:"[^"\r\n]*"|[^<>"\r\n]*)\s*<([^<>\s]+)>\s*$/.exec(text)
  const address = angled?.[1] ?? text.trim()
  return ADDRESS.test(address) ? address : null
}

function parseSmtp(env: Env): SmtpConfig | null {
  const text = read(env, 'PLINTH_SMTP_URL')
  if (text === undefined) return null
  let url: URL
  try {
    url = new URL(text)
  } catch {
    // The value may hold a password: never repeated in the error.
    throw new ConfigError(
      'PLINTH_SMTP_URL',
      'is not a URL: give smtp://user:password@host:587 (STARTTLS) or smtps://user:password@host:465 (TLS)',
    )
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new ConfigError('PLINTH_SMTP_URL', `must start with smtp:// or smtps://, not ${url.protocol}//`)
  if (url.hostname === '') throw new ConfigError('PLINTH_SMTP_URL', 'names no host: smtp://user:password@host:587')
  if (url.pathname !== '' && url.pathname !== '/')
    throw new ConfigError('PLINTH_SMTP_URL', 'takes no path: smtp://user:password@host:587, options after ?')
  const implicitTls = url.protocol === 'smtps:'
  const port = url.port === '' ? (implicitTls ? 465 : 587) : Number(url.port)
  let starttls: SmtpConfig['starttls'] = 'required'
  for (const [name, value] of url.searchParams) {
    if (name !== 'starttls')
      throw new ConfigError('PLINTH_SMTP_URL', `has an option Plinth does not know: ${name} (it takes starttls=required|optional|off)`)
    if (value !== 'required' && value !== 'optional' && value !== 'off')
      throw new ConfigError('PLINTH_SMTP_URL', `starttls must be required, optional or off, got ${JSON.stringify(value)}`)
    if (implicitTls) throw new ConfigError('PLINTH_SMTP_URL', 'smtps:// is TLS from the start: starttls applies to smtp:// only')
    starttls = value
  }
  const user = decodeURIComponent(url.username)
  const pass = decodeURIComponent(url.password)
  if (user === '' && pass !== '') throw new ConfigError('PLINTH_SMTP_URL', 'has a password without a user')
  if (pass !== '' && !implicitTls && starttls === 'off' && !isLoopbackHost(url.hostname))
    throw new ConfigError(
      'PLINTH_SMTP_URL',
      `would send its password unencrypted to ${url.hostname} (starttls=off): use STARTTLS (drop starttls=off) or smtps://`,
    )
  const caText = read(env, 'PLINTH_SMTP_CA_FILE')
  const caFile = caText === undefined ? null : resolve(caText)
  if (caFile !== null && !existsSync(caFile)) throw new ConfigError('PLINTH_SMTP_CA_FILE', `names ${caFile}, which does not exist`)
  const credentials = user === '' ? null : Object.freeze({ user, pass })
  return Object.freeze({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    implicitTls,
    starttls,
    caFile,
    credentials: () => credentials,
    display: `${url.protocol}//${user === '' ? '' : `${encodeURIComponent(user)}@`}${url.host}${starttls === 'required' ? '' : `?starttls=${starttls}`}`,
  })
}

function parseDkim(env: Env): DkimConfig | null {
  const domainName = read(env, 'PLINTH_DKIM_DOMAIN')
  const keySelector = read(env, 'PLINTH_DKIM_SELECTOR')
  const keyFile = read(env, 'PLINTH_DKIM_KEY_FILE')
  const given = [domainName, keySelector, keyFile].filter((v) => v !== undefined).length
  if (given === 0) return null
  if (given !== 3)
    throw new ConfigError(
      domainName === undefined ? 'PLINTH_DKIM_DOMAIN' : keySelector === undefined ? 'PLINTH_DKIM_SELECTOR' : 'PLINTH_DKIM_KEY_FILE',
      'is missing: DKIM signing takes all three of PLINTH_DKIM_DOMAIN, PLINTH_DKIM_SELECTOR and PLINTH_DKIM_KEY_FILE',
    )
  if (!/^[a-z0-9.-]+$/i.test(domainName!))
    throw new ConfigError('PLINTH_DKIM_DOMAIN', `must be a domain name, got ${JSON.stringify(domainName)}`)
  if (!/^[a-z0-9._-]+$/i.test(keySelector!))
    throw new ConfigError('PLINTH_DKIM_SELECTOR', `must be a DNS label, got ${JSON.stringify(keySelector)}`)
  const path = resolve(keyFile!)
  let pem: string
  try {
    pem = readFileSync(path, 'utf8')
    createPrivateKey(pem)
  } catch (error) {
    throw new ConfigError(
      'PLINTH_DKIM_KEY_FILE',
      `must name a readable PEM private key (openssl genrsa -out dkim.pem 2048): ${path}: ${(error as NodeJS.ErrnoException).code ?? 'not a private key'}`,
    )
  }
  return Object.freeze({ domainName: domainName!.toLowerCase(), keySelector: keySelector!, privateKey: () => pem })
}

/** PLINTH_MAIL_LIMITS: `address=10/h,50/d;organization=200/h,1000/d` (any part may be left out). */
function parseLimits(env: Env): MailLimits {
  const text = read(env, 'PLINTH_MAIL_LIMITS')
  if (text === undefined) return MAIL_LIMITS_DEFAULT
  const limits = { ...MAIL_LIMITS_DEFAULT }
  const bad = (why: string) => new ConfigError('PLINTH_MAIL_LIMITS', `${why}; write it as address=10/h,50/d;organization=200/h,1000/d`)
  for (const part of text.split(';')) {
    const match = /^\s*(address|organization)\s*=\s*(.+)$/.exec(part)
    if (match === null) throw bad(`${JSON.stringify(part)} is not address=… or organization=…`)
    for (const rate of match[2]!.split(',')) {
      const each = /^\s*(\d{1,7})\s*\/\s*(h|d)\s*$/.exec(rate)
      if (each === null || Number(each[1]) < 1) throw bad(`${JSON.stringify(rate.trim())} is not a count from 1 per h or d`)
      const key = `per${match[1] === 'address' ? 'Address' : 'Organization'}${each[2] === 'h' ? 'Hour' : 'Day'}` as keyof MailLimits
      limits[key] = Number(each[1])
    }
  }
  return Object.freeze(limits)
}

export function parseMail(env: Env): MailConfig {
  const from = read(env, 'PLINTH_MAIL_FROM') ?? null
  if (from !== null && fromAddress(from) === null)
    throw new ConfigError(
      'PLINTH_MAIL_FROM',
      `must be an address, or a name and an address: "Plinth <no-reply@example.com>", got ${JSON.stringify(from)}`,
    )
  return Object.freeze({ smtp: parseSmtp(env), from, dkim: parseDkim(env), limits: parseLimits(env) })
}
