// Deploy tickets: a signed, short-lived, single-use permission to deploy one folder to one static site.
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { SECRET_PREFIXES } from '../../core/ids.js'
import { readToken, signToken } from '../../core/signed.js'
import { DEPLOY_TICKET_MS } from '../../core/limits.js'
import { issuerOf, type Issuer, type Principal } from '../../core/principal.js'

/** Where a ticket is spent (the only place it authenticates). */
export const TICKET_DEPLOY_PATH = '/public/v1/deploys'

/** What a ticket says, readable by whoever holds it (signed, not encrypted: the helper reads websiteId). */
export interface TicketClaims {
  websiteId: string
  orgId: string
  /** The head when the ticket was issued: the deploy is refused (409) if the head moved since. */
  headVersion: number
  /** Who asked for it: the deploy is theirs, with their role, on this one website. */
  by: Issuer
  nonce: string
  /**
   * When begin_deploy's ticket expires (ms). /public/v1/deploys/uploads answers a fresh ticket for the
   * deploy, and never after this: a chain of renewals ends with its first ticket's five minutes.
   * Absent from tickets issued before it existed (then the ticket's own expiry).
   */
  first?: number
}

/** The 401 of a ticket that cannot be used; the message says why and what to do. */
export const unusableTicket = (why: string) =>
  new ApiError('unauthorized', `${why}; get a new ticket with begin_deploy (MCP) and deploy with it straight away`, {
    reason: 'ticket_invalid',
  })

/**
 * Issues and spends deploy tickets. A ticket is `wd_<claims>.<expiry>.<signature>`: base64url JSON
 * claims, the expiry in milliseconds, and an HMAC-SHA256 of both under a key derived from the
 * installation's. It authenticates one request, at TICKET_DEPLOY_PATH, within 5 minutes; a spent
 * ticket is remembered until it expires, and a request that deployed nothing gives it back. A restart
 * forgets the spent ones, but the head version the ticket carries has moved by then if it deployed,
 * so it is refused all the same (409). Whether its issuer may still deploy is checked at every use
 * (actors/identity/auth.ts), not here: a signature proves who asked, not that they still may.
 */
export class DeployTickets {
  readonly #spent = new Map<string, number>()

  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
  ) {}

  /** begin_deploy's ticket: five minutes from now. */
  issue(principal: Principal, website: { id: string; orgId: string }, headVersion: number): { ticket: string; expiresAt: number } {
    const expiresAt = this.clock.now() + DEPLOY_TICKET_MS
    return { ticket: this.#sign(principal, website, headVersion, expiresAt, expiresAt), expiresAt }
  }

  /**
   * A fresh ticket for the deploy that follows /public/v1/deploys/uploads (the one presented was
   * spent there): five minutes from now, handed out only within the first ticket's lifetime.
   */
  renew(principal: Principal, website: { id: string; orgId: string }): string {
    const use = principal.ticket!
    const now = this.clock.now()
    if (now >= use.chainExpiresAt)
      throw unusableTicket(
        "This ticket was renewed from one begin_deploy issued more than 5 minutes ago, and renewals end with the first ticket's lifetime",
      )
    return this.#sign(principal, website, use.headVersion, now + DEPLOY_TICKET_MS, use.chainExpiresAt)
  }

  #sign(principal: Principal, website: { id: string; orgId: string }, headVersion: number, expiresAt: number, first: number): string {
    const claims: TicketClaims = {
      websiteId: website.id,
      orgId: website.orgId,
      headVersion,
      by: issuerOf(principal),
      nonce: randomBytes(12).toString('base64url'),
      first,
    }
    return signToken(this.key, SECRET_PREFIXES.deployTicket, claims, expiresAt)
  }

  /** Checks and spends a ticket: its claims and expiry, or 401 (malformed, forged, expired or already used). */
  spend(ticket: string): { claims: TicketClaims; expiresAt: number } {
    const now = this.clock.now()
    const read = readToken<TicketClaims>(this.key, SECRET_PREFIXES.deployTicket, ticket, now, DEPLOY_TICKET_MS)
    if (!read.ok)
      throw unusableTicket(
        read.why === 'malformed'
          ? 'Not a deploy ticket (wd_…)'
          : read.why === 'forged'
            ? 'This deploy ticket was not issued here'
            : read.why === 'too-long'
              ? 'This deploy ticket claims to live longer than the 5 minutes tickets are issued for: it was not issued here'
              : 'This deploy ticket expired (tickets last 5 minutes)',
      )
    const { claims, expiresAt } = read
    // The chain's end is capped the same way (a renewal never outlives the first ticket's 5 minutes).
    if (claims.first !== undefined && claims.first - now > DEPLOY_TICKET_MS)
      throw unusableTicket('This deploy ticket claims a chain longer than the 5 minutes tickets are issued for: it was not issued here')
    for (const [nonce, until] of this.#spent) if (until <= now) this.#spent.delete(nonce)
    if (this.#spent.has(claims.nonce))
      throw unusableTicket(
        'This deploy ticket was already used, or another request is using it now (a ticket is good for one deploy; after /public/v1/deploys/uploads, deploy with the ticket it answered)',
      )
    this.#spent.set(claims.nonce, expiresAt)
    return { claims, expiresAt }
  }

  /**
   * Gives a spent ticket back: its request deployed nothing (refused for its input, its rate, a
   * moved head, or anything else before the commit), so a later request may use it (still within
   * its 5 minutes).
   */
  refund(nonce: string): void {
    this.#spent.delete(nonce)
  }
}
