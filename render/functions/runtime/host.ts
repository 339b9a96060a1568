/**
 * The bridge to the host: its three isolated-vm References, taken off the global before any site code
 * runs (so only this closure can reach them), and which request the code running now belongs to.
 *
 * Bare V8 has no async context, so "the current request" is tracked at the points where the host
 * enters the isolate: __plinthInvoke, the settling of a host call, a timer firing. The microtasks that
 * follow run to completion before the host enters again, so they are the entering request's (exact
 * when one request at a time runs in an isolate, the usual case; best effort when several overlap).
 */

/** What a Reference to a host function offers inside the isolate (isolated-vm 5). */
interface HostFunction {
  apply(receiver: undefined, args: unknown[], options: object): Promise<unknown>
  applySync(receiver: undefined, args: unknown[], options?: object): unknown
  applyIgnored(receiver: undefined, args: unknown[], options?: object): void
}

interface PlinthHost {
  log: HostFunction
  random: HostFunction
  call: HostFunction
}

// Captured before site code can replace them: the protocol must not depend on what a site patches.
export const parseJson = JSON.parse
export const toJson = JSON.stringify

const globals = globalThis as unknown as Record<string, unknown>
const host = globals.__plinthHost as PlinthHost | undefined
delete globals.__plinthHost
if (host === undefined || host === null || typeof host.call?.apply !== 'function')
  throw new Error('the functions runtime needs __plinthHost (log, random, call) on the global before it runs')
const logRef = host.log
const randomRef = host.random
const callRef = host.call

/** Options objects without a prototype: a site adding properties to Object.prototype cannot change how values cross. */
function options<T extends object>(value: T): T {
  return Object.freeze(Object.assign(Object.create(null) as object, value)) as T
}
const CALL_OPTIONS = options({ arguments: options({ copy: true }), result: options({ promise: true, copy: true }) })
const RANDOM_OPTIONS = options({ result: options({ copy: true }) })

let current = 0
/** Requests the host has handed in and that have not finished (their body written, their waitUntil settled). */
const live = new Set<number>()

export function beginRequest(id: number): void {
  live.add(id)
  current = id
}

export function endRequest(id: number): void {
  live.delete(id)
  if (current === id) current = 0
}

export function isLive(id: number): boolean {
  return live.has(id)
}

/** Marks the code about to run as the given request's (a timer's callback, a host answer's continuation). */
export function enter(id: number): void {
  current = id
}

/** The request the running code belongs to, or 0 outside any (top level, or after its request finished). */
export function currentRequest(): number {
  return live.has(current) ? current : 0
}

/** The current request, or an error naming what needs one: I/O and timers only work while a request is handled. */
export function requireRequest(what: string): number {
  const id = currentRequest()
  if (id === 0)
    throw new Error(
      `${what} can only be used while a request is being handled: not at the top level of a functions file, and not after the request has finished`,
    )
  return id
}

export function hostLog(id: number, level: string, text: string): void {
  try {
    logRef.applyIgnored(undefined, [id, level, text])
  } catch {
    // A log line that cannot be sent (the isolate is being torn down) is dropped, never thrown at the site.
  }
}

export function hostRandom(length: number): Uint8Array {
  return new Uint8Array(randomRef.applySync(undefined, [length], RANDOM_OPTIONS) as ArrayBuffer)
}

/** A host failure as plain text: what the host rejected with, never an object the site could probe. */
export function hostMessage(error: unknown): string {
  if (error instanceof Error && typeof error.message === 'string') return error.message
  return typeof error === 'string' ? error : 'the host refused the operation'
}

export type HostAnswer = [string, ArrayBuffer | undefined]

/** One asynchronous host operation for a request; its continuation runs as that request's. */
export function hostCall(id: number, op: string, json: string, bytes?: ArrayBuffer): Promise<HostAnswer> {
  let pending: Promise<unknown>
  try {
    pending = callRef.apply(undefined, [id, op, json, bytes], CALL_OPTIONS)
  } catch (error) {
    return Promise.reject(new Error(hostMessage(error)))
  }
  return pending.then(
    (answer) => {
      current = id
      return answer as HostAnswer
    },
    (error: unknown) => {
      current = id
      throw new Error(hostMessage(error))
    },
  )
}

/** An ArrayBuffer holding exactly these bytes (a copy only when the view does not span its buffer). */
export function exactBuffer(bytes: Uint8Array): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes.buffer
  return bytes.slice().buffer
}
