// Readers of one environment variable each (trimmed text, counts, byte sizes, address lists) and the error naming a bad one.
import { BlockList, isIP } from 'node:net'

/** A bad environment variable; the message names it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
    this.name = 'ConfigError'
  }
}

/** The environment as `loadConfig` reads it. */
export type Env = Readonly<Record<string, string | undefined>>

/** A variable's value, trimmed; undefined when unset or blank. */
/** Whether a host is this machine (localhost, ::1, 127.x): plain connections to it cross no network. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare)
}

export function read(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kib: 1024,
  k: 1024,
  kb: 1000,
  mib: 1024 ** 2,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  gib: 1024 ** 3,
  g: 1024 ** 3,
  gb: 1000 ** 3,
}

/** A count setting: a whole number of at least 1. */
export function parseCount(env: Env, name: string, fallback: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1)
    throw new ConfigError(name, `must be a whole number of at least 1, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

/** A size setting: a number of bytes, or with a unit (KiB, MiB, GiB, KB, MB, GB). */
export function parseBytes(env: Env, name: string, fallback: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(raw)
  const unit = match === null ? undefined : SIZE_UNITS[match[2].toLowerCase()]
  if (match === null || unit === undefined)
    throw new ConfigError(
      name,
      `must be a number of bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB), such as 500MiB; got ${JSON.stringify(raw)}`,
    )
  return Math.floor(Number(match[1]) * unit)
}

/** The entries of a comma-separated list setting, trimmed, blanks dropped; none when unset. */
function readList(env: Env, name: string): string[] {
  const raw = read(env, name)
  if (raw === undefined) return []
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
}

/** Comma-separated http(s) URLs (PLINTH_PURGE_URLS), or none. */
export function parseUrlList(env: Env, name: string): readonly string[] {
  const entries = readList(env, name)
  for (const entry of entries) {
    let url: URL | null = null
    try {
      url = new URL(entry)
    } catch {
      url = null
    }
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new ConfigError(name, `must be http(s) URLs separated by commas (http://127.0.0.1:6081/), got ${JSON.stringify(entry)}`)
  }
  return Object.freeze(entries)
}

/** An address list setting: addresses or CIDR ranges separated by commas. */
export function parseAddressList(env: Env, name: string): readonly string[] {
  const entries = readList(env, name)
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/')
    const family = isIP(address)
    const max = family === 4 ? 32 : 128
    if (family === 0 || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError(
        name,
        `must be addresses or CIDR ranges separated by commas (10.0.0.1, 10.0.0.0/8, fd00::/8), got ${JSON.stringify(entry)}`,
      )
    }
  }
  return Object.freeze(entries)
}

/** An address list setting (as parseAddressList checked it) as a BlockList to ask of one address. */
export function blockListOf(entries: readonly string[]): BlockList {
  const list = new BlockList()
  for (const entry of entries) {
    const [address, bits] = entry.split('/')
    const type = isIP(address!) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(address!, type)
    else list.addSubnet(address!, Number(bits), type)
  }
  return list
}

/** The kind of NATS credentials a file holds, by its content: a `.creds` file (a user JWT and its seed), an nkey seed, or `user:password`. */
export function credentialsKind(text: string): 'creds' | 'nkey' | 'password' | null {
  if (text.includes('-----BEGIN NATS USER JWT-----')) return 'creds'
  const line = text.trim()
  if (/^SU[A-Z2-7]{56}$/.test(line)) return 'nkey'
  if (/^[^:\s]+:.+$/.test(line) && !line.includes('\n')) return 'password'
  return null
}
