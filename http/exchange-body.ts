/** Reading a request's body off an exchange: whole within a limit, or streamed into a sink with backpressure. */

import { ApiError } from '../core/errors.js'
import { BODY_IDLE_MS } from '../core/limits.js'

/** How much of a refused body is read and dropped, for a client that will be closed after the 413. */
const DRAIN_MAX_BYTES = 64 << 20

/** What reading a body needs of an exchange (http/uws.ts's Exchange): its headers and abort notices. */
export interface BodyExchange {
  readonly aborted: boolean
  header(name: string): string
  onAborted(handler: () => void): void
}

/** uWS's body data of one request (each chunk's ArrayBuffer is neutered after the callback). */
export type OnData = (handler: (chunk: ArrayBuffer, isLast: boolean) => void) => void

/** The body data of one request, and pausing and resuming its socket. */
export interface BodyStream {
  onData: OnData
  pause(): void
  resume(): void
}

/** Where a deferred body goes: `write` returning false waits for `onceDrained`. */
export interface BodySink {
  write(chunk: Buffer): boolean
  onceDrained(resume: () => void): void
}

/** A body taken for reading later (Exchange.deferBody). */
export interface DeferredBody {
  /** `idleMs`: how long the body may stop arriving before the 408 (BODY_IDLE_MS unless told). */
  pipe(limitBytes: number, sink: BodySink, idleMs?: number): Promise<number>
}

/** The whole body, at most `limitBytes` (Exchange.readBody says how it refuses). */
export function readWholeBody(exchange: BodyExchange, onData: OnData, limitBytes: number): Promise<Buffer> {
  const declared = Number(exchange.header('content-length') || '0')
  const closing = /\bclose\b/i.test(exchange.header('connection'))
  return new Promise((resolve, reject) => {
    if (declared > limitBytes && !closing) {
      reject(tooLarge(limitBytes))
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    let refused = declared > limitBytes
    let settled = false
    const settle = (fail: unknown, body?: Buffer) => {
      settled = true
      clearTimeout(idle)
      if (body === undefined) reject(fail)
      else resolve(body)
    }
    const stalled = () =>
      settle(
        new ApiError(
          'request_timeout',
          `The request body stopped arriving: nothing for ${BODY_IDLE_MS / 1000} s after ${size} of ${declared || 'an unknown number of'} bytes; send the whole body without pausing`,
        ),
      )
    let idle = setTimeout(stalled, BODY_IDLE_MS)
    exchange.onAborted(() => settled || settle(new Error('request aborted')))
    onData((chunk, isLast) => {
      // After an answer uWS goes on delivering the rest of the body; it is dropped.
      if (settled) return
      size += chunk.byteLength
      if (size > limitBytes && !refused) {
        if (!closing) return settle(tooLarge(limitBytes))
        refused = true
      }
      if (refused) {
        if (isLast || size > limitBytes + DRAIN_MAX_BYTES) settle(tooLarge(limitBytes))
      } else if (isLast) {
        // uWS neuters the ArrayBuffer after the callback: copy it.
        chunks.push(Buffer.from(Buffer.from(chunk)))
        return settle(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
      } else chunks.push(Buffer.from(Buffer.from(chunk)))
      clearTimeout(idle)
      if (!settled) idle = setTimeout(stalled, BODY_IDLE_MS)
    })
  })
}

/** The body taken now and handed to a sink later (Exchange.deferBody says how). */
export function deferBodyStream(exchange: BodyExchange, stream: BodyStream): DeferredBody {
  const early: Buffer[] = []
  let ended = false
  let size = 0
  let deliver: ((chunk: Buffer, isLast: boolean) => void) | null = null
  stream.pause()
  stream.onData((chunk, isLast) => {
    // uWS neuters the ArrayBuffer after the callback: copy it.
    const copy = Buffer.from(Buffer.from(chunk))
    if (deliver !== null) return deliver(copy, isLast)
    early.push(copy)
    if (isLast) ended = true
  })
  return {
    pipe: (limitBytes, sink, idleMs = BODY_IDLE_MS) =>
      new Promise<number>((resolve, reject) => {
        let settled = false
        const settle = (fail: unknown) => {
          if (settled) return
          settled = true
          clearTimeout(idle)
          deliver = () => undefined
          if (fail === null) resolve(size)
          else reject(fail)
        }
        const stalled = () =>
          settle(
            new ApiError(
              'request_timeout',
              `The request body stopped arriving: nothing for ${idleMs / 1000} s after ${size} bytes; send the rest with the offset the resume call answers`,
            ),
          )
        let idle = setTimeout(stalled, idleMs)
        exchange.onAborted(() => settle(new Error('request aborted')))
        let waiting = false
        const take = (chunk: Buffer, isLast: boolean): void => {
          if (settled) return
          size += chunk.length
          if (size > limitBytes) return settle(tooLarge(limitBytes))
          const more = chunk.length === 0 ? true : sink.write(chunk)
          clearTimeout(idle)
          if (isLast) return settle(null)
          idle = setTimeout(stalled, idleMs)
          if (!more && !waiting) {
            waiting = true
            stream.pause()
            sink.onceDrained(() => {
              waiting = false
              if (!settled && !exchange.aborted) stream.resume()
            })
          }
        }
        for (let i = 0; i < early.length; i++) take(early[i], ended && i === early.length - 1)
        if (early.length === 0 && ended) return settle(null)
        early.length = 0
        if (settled) return
        deliver = take
        if (!waiting) stream.resume()
      }),
  }
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `Request body is over the limit of ${limitBytes} bytes for this operation`, {
    limitBytes,
  })
}
