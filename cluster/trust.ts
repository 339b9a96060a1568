// What the nodes of a cluster prove to each other, with keys derived from the installation's secret
// (PLINTH_SECRET_FILE, the same file on every node; it never travels over NATS): log entries, the lease,
// the messages between nodes, the requests a replica hands the primary, the primary's own address, and
// the operator's commands a node hands the primary (sealed: they may carry a password).
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { deriveKey } from '../core/installation-secret.js'

/** A node's name, as PLINTH_NODE_NAME allows it (also what a received name must look like before it is used). */
export const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/

/** The chain's start: the `prev` of a cluster's first entry. */
export { GENESIS } from '../core/store/write-set.js'

/**
 * How far apart a replica's clock and the primary's may be for a forward to count (and how long its
 * nonce is remembered): nodes keep their clocks within a second or two of each other (NTP).
 */
export const FORWARD_WINDOW_MS = 10_000

/** What one part of a log entry says of itself (its message's headers); the MAC covers all of it and the part's bytes. */
export interface PartHeader {
  epoch: number
  node: string
  index: number
  of: number
  /** The chained digest of the entry before (GENESIS for the first). */
  prev: string
  /** This entry's chained digest: SHA-256 of `prev`, a newline, and the whole entry's bytes. */
  digest: string
}

/** The lease's record as the bucket holds it: each renewal counts up, so an old record said again is older than the live one. */
export interface SignedHolder {
  node: string
  url: string
  epoch: number
  renewal: number
  mac: string
}

/** A request a replica hands on, as its signature covers it. */
export interface ForwardedRequest {
  method: string
  host: string
  /** Path and query, as sent. */
  target: string
  /** The client's address the replica names. */
  peer: string
}

const hex = (key: Buffer, ...parts: (string | Uint8Array)[]): string => {
  const mac = createHmac('sha256', key)
  for (const part of parts) mac.update(part)
  return mac.digest('hex')
}

const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export { chainDigest } from '../core/store/write-set.js'

/**
 * The cluster's keys, one per purpose, derived from the installation's secret: a holder of NATS
 * credentials without the secret can read and write NATS, but nothing it writes is believed.
 */
export class ClusterTrust {
  readonly #log: Buffer
  readonly #lease: Buffer
  readonly #messages: Buffer
  readonly #forward: Buffer
  readonly #challenge: Buffer
  readonly #sealed: Buffer
  /** Forward nonces seen within the window (the primary's main thread): each forward counts once. */
  readonly #seen = new Map<string, number>()

  constructor(secret: Buffer) {
    this.#log = deriveKey(secret, 'cluster log')
    this.#lease = deriveKey(secret, 'cluster lease')
    this.#messages = deriveKey(secret, 'cluster messages')
    this.#forward = deriveKey(secret, 'cluster forwards')
    this.#challenge = deriveKey(secret, 'cluster challenges')
    this.#sealed = deriveKey(secret, 'cluster sealed messages')
  }

  /** The MAC of one part of a log entry: its header fields and its bytes. */
  partMac(header: PartHeader, data: Uint8Array): string {
    const { epoch, node, index, of, prev, digest } = header
    return hex(this.#log, `plinth log part 1\n${epoch}\n${node}\n${index}/${of}\n${prev}\n${digest}\n`, data)
  }

  checkPart(header: PartHeader, data: Uint8Array, mac: string): boolean {
    return same(this.partMac(header, data), mac)
  }

  /**
   * A part's message id at the sequence it is published at: the stream's duplicate window makes a retry
   * there idempotent, and nobody without the key can take the id before the primary does.
   */
  messageId(epoch: number, seq: number, mac: string): string {
    return `${epoch}-${seq}-${hex(this.#log, `plinth message id\n${epoch}\n${seq}\n${mac}`).slice(0, 24)}`
  }

  /** The lease's record for a holder, signed. */
  signLease(holder: { node: string; url: string; epoch: number; renewal: number }): SignedHolder {
    const { node, url, epoch, renewal } = holder
    return { node, url, epoch, renewal, mac: hex(this.#lease, `plinth lease\n${node}\n${url}\n${epoch}\n${renewal}`) }
  }

  /** A lease record that a node signed (and well formed), or null. */
  checkLease(value: unknown): SignedHolder | null {
    const record = value as Partial<SignedHolder> | null
    if (
      record === null ||
      typeof record !== 'object' ||
      typeof record.node !== 'string' ||
      !NODE_NAME.test(record.node) ||
      typeof record.url !== 'string' ||
      !/^https?:\/\/[^/?#\s]+$/.test(record.url) ||
      typeof record.epoch !== 'number' ||
      !Number.isSafeInteger(record.epoch) ||
      typeof record.renewal !== 'number' ||
      !Number.isSafeInteger(record.renewal) ||
      typeof record.mac !== 'string'
    )
      return null
    const { node, url, epoch, renewal, mac } = record
    return same(this.signLease({ node, url, epoch, renewal }).mac, mac) ? { node, url, epoch, renewal, mac } : null
  }

  /** The headers that prove a message between nodes (page views, how far a replica applied, a backup ended) and when it was said. */
  sealMessage(subject: string, payload: Uint8Array, now: number): { at: string; mac: string } {
    const at = String(now)
    return { at, mac: hex(this.#messages, `plinth message\n${subject}\n${at}\n`, payload) }
  }

  /** When a message between nodes was said (the sender's clock), or null when no node said it. */
  openMessage(subject: string, payload: Uint8Array, at: string | undefined, mac: string | undefined): number | null {
    if (at === undefined || mac === undefined || !/^\d{1,16}$/.test(at)) return null
    return same(hex(this.#messages, `plinth message\n${subject}\n${at}\n`, payload), mac) ? Number(at) : null
  }

  /**
   * The `x-plinth-cluster-forward` header of a request a replica hands the primary: when, a nonce, and
   * a MAC of both with the method, host, path and the client's address.
   */
  signForward(request: ForwardedRequest, now: number): string {
    const nonce = randomBytes(16).toString('hex')
    return `${now}.${nonce}.${this.#forwardMac(request, now, nonce)}`
  }

  /**
   * Whether a request comes from another node (the primary checks every one it is handed): the
   * signature holds, it is within FORWARD_WINDOW_MS of this node's clock, and its nonce was not seen
   * before. `old` is a signed forward outside the window (clocks apart, or a replay); anything else
   * that fails is `bad`. Either is a client's own request.
   */
  checkForward(request: ForwardedRequest, header: string, now: number): 'ok' | 'bad' | 'old' | 'replayed' {
    const match = /^(\d{1,16})\.([0-9a-f]{32})\.([0-9a-f]{64})$/.exec(header)
    if (match === null) return 'bad'
    const [, at, nonce, mac] = match as unknown as [string, string, string, string]
    if (!same(this.#forwardMac(request, Number(at), nonce), mac)) return 'bad'
    if (Math.abs(now - Number(at)) > FORWARD_WINDOW_MS) return 'old'
    if (this.#seen.size > 4096) for (const [seen, until] of this.#seen) if (until < now) this.#seen.delete(seen)
    if (this.#seen.has(nonce)) return 'replayed'
    this.#seen.set(nonce, Number(at) + FORWARD_WINDOW_MS)
    return 'ok'
  }

  #forwardMac(request: ForwardedRequest, at: number, nonce: string): string {
    const { method, host, target, peer } = request
    return hex(this.#forward, `plinth forward\n${at}\n${nonce}\n${method}\n${host}\n${target}\n${peer}`)
  }

  /**
   * The answer to a replica's challenge that only the primary of `epoch` gives, for the address it is
   * reached at (PLINTH_NODE_URL): proof that this address is that node. The address in it means that an
   * address relaying the challenge to the real primary gets a proof for the primary's address, not its own.
   */
  challengeProof(nonce: string, node: string, epoch: number, url: string): string {
    return hex(this.#challenge, `plinth challenge\n${nonce}\n${node}\n${epoch}\n${url}`)
  }

  checkChallenge(nonce: string, node: string, epoch: number, url: string, proof: string): boolean {
    return same(this.challengeProof(nonce, node, epoch, url), proof)
  }

  /**
   * `plain` encrypted and authenticated (AES-256-GCM) for `subject`: what only a node may read, such as an
   * operator's command with a person's password, travels over NATS as this.
   */
  seal(subject: string, plain: Uint8Array): Buffer {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#sealed, iv)
    cipher.setAAD(Buffer.from(`plinth sealed\n${subject}`))
    const body = Buffer.concat([cipher.update(plain), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body])
  }

  /** What `seal` sealed for `subject`, or null when no node sealed it (or it was sealed for another subject). */
  open(subject: string, box: Uint8Array): Buffer | null {
    if (box.byteLength < 28) return null
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#sealed, box.subarray(0, 12))
      decipher.setAAD(Buffer.from(`plinth sealed\n${subject}`))
      decipher.setAuthTag(box.subarray(12, 28))
      return Buffer.concat([decipher.update(box.subarray(28)), decipher.final()])
    } catch {
      return null
    }
  }
}
