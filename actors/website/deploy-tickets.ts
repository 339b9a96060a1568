// Deploy tickets: a signed, short-lived, single-use permission to deploy one folder to one static site.
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { SECRET_PREFIXES } from '../../core/ids.js'
import { readToken, signToken } from '../../core/signed.js'
import { DEPLOY_TICKET_MS } from '../../core/limits.js'
import { issuerOf, issuerOnWebsite, type Issuer, type Principal } from '../../core/principal.js'

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
}

const unusable = (why: string) =>
  new ApiError('unauthorized', `${why}; get a new ticket with begin_deploy (MCP) and deploy with it straight away`, {
    reason: 'ticket_invalid',
  })

/**
 * Issues and spends deploy tickets. A ticket is `wd_<claims>.<expiry>.<signature>`: base64url JSON
 * claims, the expiry in milliseconds, and an HMAC-SHA256 of both under a key derived from the
 * installation's. It authenticates one request, at TICKET_DEPLOY_PATH, within 5 minutes; a spent
 * ticket is remembered until it expires. A restart forgets the spent ones, but the head version the
 * ticket carries has moved by then if it deployed, so it is refused all the same (409).
 */
export class DeployTickets {
  readonly #spent = new Map<string, number>()

  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
  ) {}

  issue(principal: Principal, website: { id: string; orgId: string }, headVersion: number): { ticket: string; expiresAt: number } {
    const claims: TicketClaims = {
      websiteId: website.id,
      orgId: website.orgId,
      headVersion,
      by: issuerOf(principal),
      nonce: randomBytes(12).toString('base64url'),
    }
    const expiresAt = this.clock.now() + DEPLOY_TICKET_MS
    return { ticket: signToken(this.key, SECRET_PREFIXES.deployTicket, claims, expiresAt), expiresAt }
  }

  /** Checks and spends a ticket: its claims, or 401 (malformed, forged, expired or already used). */
  spend(ticket: string): TicketClaims {
    const now = this.clock.now()
    const read = readToken<TicketClaims>(this.key, SECRET_PREFIXES.deployTicket, ticket, now)
    if (!read.ok)
      throw unusable(
        read.why === 'malformed'
          ? 'Not a deploy ticket (wd_…)'
          : read.why === 'forged'
            ? 'This deploy ticket was not issued here'
            : 'This deploy ticket expired (tickets last 5 minutes)',
      )
    const { claims, expiresAt } = read
    for (const [nonce, until] of this.#spent) if (until <= now) this.#spent.delete(nonce)
    if (this.#spent.has(claims.nonce))
      throw unusable(
        'This deploy ticket was already used (a ticket is good for one deploy; after /public/v1/deploys/uploads, deploy with the ticket it answered)',
      )
    this.#spent.set(claims.nonce, expiresAt)
    return claims
  }

  /**
   * Gives a spent ticket back: its request was refused for its input (400, 413) before anything was
   * deployed, so the corrected request may use it (still within its 5 minutes).
   */
  refund(nonce: string): void {
    this.#spent.delete(nonce)
  }

  /** The principal a spent ticket acts as: its issuer, on its one website, with the issuer's role. */
  static principal(claims: TicketClaims): Principal {
    return {
      ...issuerOnWebsite(claims.by, claims.orgId, claims.websiteId),
      ticketHeadVersion: claims.headVersion,
      ticketNonce: claims.nonce,
    }
  }
}
