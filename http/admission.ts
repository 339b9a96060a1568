// Whether a request may be handled at all, before any routing: the loopback door's secret, one Host, one Content-Length.
import { timingSafeEqual } from 'node:crypto'

/** What admission reads of a request and how it answers one (uws.ts's Exchange). */
export interface Admissible {
  header(name: string): string
  readonly duplicateHost: boolean
  readonly repeatedLength: boolean
  forwardedFor(address: string): void
  detach(): void
  send(status: number, headers: Record<string, string>, body: string, closeConnection: boolean): void
}

/** The header a serving thread proves itself with on the main thread's loopback listener, and the one naming its client. */
export const FORWARD_SECRET_HEADER = 'x-plinth-forward'
export const FORWARD_PEER_HEADER = 'x-plinth-peer'

/**
 * Looks at a request before its handler: false when it was answered here. On the main thread's loopback
 * door (`forwardSecret`), a request must carry the serving threads' secret (403 otherwise), and its
 * client is the one the thread names; `peer` (a cluster's nodes) may name the client another node
 * handed it on for. Then the headers a request may carry only once.
 */
export function admitted<E extends Admissible>(
  exchange: E,
  forwardSecret: Buffer | undefined,
  peer: ((exchange: E) => void) | undefined,
): boolean {
  if (forwardSecret !== undefined) {
    const given = Buffer.from(exchange.header(FORWARD_SECRET_HEADER))
    if (given.length !== forwardSecret.length || !timingSafeEqual(given, forwardSecret)) {
      exchange.send(403, { 'content-type': 'text/plain; charset=utf-8' }, 'Only serving threads may call this listener\n', true)
      return false
    }
    exchange.forwardedFor(exchange.header(FORWARD_PEER_HEADER))
  }
  peer?.(exchange)
  // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request
  // message that lacks a Host header field and to any that contains more than one Host header field".
  if (exchange.duplicateHost) return refuseHeader(exchange, 'host', 'The request has more than one Host header; send exactly one')
  // RFC 9112 6.3 lets a server refuse repeated Content-Length headers with 400 or, when the values are
  // equal, read them as one. Refused, equal or not: nginx in front (deploy/nginx.conf) and Node's parser
  // answer 400 to both, and uWS closes the connection on the same thing written as one list (`5, 5`),
  // so a client is refused however it reaches us (before, uWS read the first and a serving thread
  // handed both on, which the main thread dropped: a 502). Unequal values are how a request is
  // smuggled past a proxy that reads the other one. The body's end is unknown: the connection closes.
  if (exchange.repeatedLength)
    return refuseHeader(
      exchange,
      'content-length',
      'The request has more than one Content-Length header; send exactly one, with the length of the body in bytes',
    )
  return true
}

/**
 * A 400 for a header the request may carry only once, before any routing; the connection closes after
 * it (uWS writes the one `Connection: close`). Where the request ends is not known, so nothing after it
 * on the connection may be read as a request: the answer waits for the parser's pass over what arrived
 * to end. uWS answers a request within its handler only after the pass, and goes on reading what
 * follows (a pipelined request, even for another host, was answered on the connection it had been told
 * to close). Deferred, a pipelined request behind it makes uWS drop the connection unanswered instead;
 * alone, the 400 goes out and the connection closes.
 */
function refuseHeader(exchange: Admissible, name: string, message: string): false {
  exchange.detach()
  setImmediate(() =>
    exchange.send(
      400,
      { 'content-type': 'application/json; charset=utf-8' },
      JSON.stringify({ kind: 'validation', message, details: { field: `headers.${name}` } }),
      true,
    ),
  )
  return false
}
