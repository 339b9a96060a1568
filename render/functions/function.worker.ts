/**
 * The functions process: a child process of the server (started by function-pool.ts) that runs sites'
 * functions in isolated-vm isolates, one warm isolate per compiled script, reused across requests (as
 * Workers are) and evicted least recently used under a count and a memory cap.
 *
 * Why a process (as render.worker.ts says at length): isolated-vm aborts a thread that exits with its
 * handles alive, and a crash inside V8 must not take the server down. The process gets no environment
 * of the server's: a function cannot read Plinth's secrets.
 *
 * Budgets, per request: CPU time (the isolate's CPU clock while the request is in flight, shared evenly
 * among the requests in flight on that isolate; over it, the isolate is disposed: a loop cannot be
 * stopped otherwise), wall time (the request is answered and forgotten; the isolate runs on), memory
 * (the isolate's heap limit; over it, V8 stops the isolate). Each breach is a `limit` outcome naming it.
 *
 * Protocol (IPC, advanced serialization): in `invoke`, `code` (the script a `need` asked for) and
 * `answer` (to a `call`); out `need`, `call` (write, fetch, kv, assets: what the main thread does and
 * answers; head, end and respond, the whole answer at once, are one-way: `call` 0), `log` and `done`.
 * Each IPC message is an array of these: what either side has to say in one turn of its event loop goes
 * in one write.
 */
import { randomBytes } from 'node:crypto'
import ivm from 'isolated-vm'
import { HostCrypto } from './host-crypto.js'
import { compileRuntime } from './runtime-script.js'

export interface FunctionLimits {
  cpuMs: number
  wallMs: number
  memoryMb: number
}

export type FunctionRequest =
  | { t: 'invoke'; id: number; script: string; head: string; body: Uint8Array | null; limits: FunctionLimits }
  | { t: 'code'; script: string; code: string | null }
  | { t: 'answer'; id: number; call: number; ok?: [string, Uint8Array | null]; error?: string }

export type Outcome =
  | { ok: true }
  | { failure: { message: string; stack: string } }
  | { limit: 'cpu' | 'memory' | 'wall' | 'restarted' | 'load'; message: string }

export type FunctionReply =
  | { t: 'need'; script: string }
  | { t: 'call'; id: number; call: number; op: string; json: string; bytes: Uint8Array | null }
  | { t: 'log'; id: number; level: string; text: string }
  | { t: 'done'; id: number; outcome: Outcome; cpuMs: number; cold: boolean }

/** The URL stack frames of a site's compiled functions carry (mapped back to its files by the pool). */
export const FUNCTIONS_URL = 'file:///functions.js'
/** Warm isolates kept at most, and the heap they may hold together before the least recently used go. */
const MAX_SITES = 200
const MAX_HEAP_BYTES = 1024 * 1024 * 1024
/** How often the CPU watchdog looks at isolates with requests in flight. */
const WATCH_MS = 5
/** A request logs at most this many lines, each cut at this many characters. */
const LOG_LINES_MAX = 100
const LOG_CHARS_MAX = 4096

interface InFlight {
  id: number
  site: Site
  limits: FunctionLimits
  cpuNs: number
  cold: boolean
  logLines: number
  wall: NodeJS.Timeout
  settle(outcome: Outcome): void
}

interface Site {
  script: string
  isolate: ivm.Isolate
  invoke: ivm.Reference<(id: number, head: string, body: ArrayBuffer | undefined) => Promise<string>>
  inflight: Map<number, InFlight>
  lastCpu: bigint
  heapBytes: number
  /** The limit that disposed it, while its requests are being answered. */
  stopped: 'cpu' | 'memory' | null
}

/**
 * Replies go out together, once per turn of the event loop: under load one pipe write (and one read
 * on the other side) carries many requests' answers instead of one each.
 */
let outbox: FunctionReply[] = []
const send = (reply: FunctionReply) => {
  if (outbox.push(reply) === 1) setImmediate(flush)
}
function flush(): void {
  const replies = outbox
  outbox = []
  process.send!(replies)
}
const sites = new Map<string, Site>()
const loading = new Map<string, { waiters: ((code: string | null) => void)[] }>()
const requests = new Map<number, InFlight>()
const calls = new Map<number, { resolve(v: [string, ArrayBuffer | undefined]): void; reject(e: Error): void }>()
let nextCall = 1
let watchdog: NodeJS.Timeout | undefined

/** What the main thread is told without waiting for an answer: the answer's head, its end, or all of it at once. */
const ONE_WAY = new Set(['head', 'end', 'respond'])
const DONE: [string, undefined] = ['{}', undefined]

/** What the main thread does for a request: asked over IPC, answered with `answer` (one-way ops at once). */
function hostCall(id: number, op: string, json: string, bytes: ArrayBuffer | undefined): Promise<[string, ArrayBuffer | undefined]> {
  if (!requests.has(id)) return Promise.reject(new Error('the request this belongs to has ended'))
  if (ONE_WAY.has(op)) {
    send({ t: 'call', id, call: 0, op, json, bytes: bytes === undefined ? null : new Uint8Array(bytes) })
    return Promise.resolve(DONE)
  }
  const call = nextCall++
  return new Promise((resolve, reject) => {
    calls.set(call, { resolve, reject })
    send({ t: 'call', id, call, op, json, bytes: bytes === undefined ? null : new Uint8Array(bytes) })
  })
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

async function load(script: string, code: string, memoryMb: number): Promise<Site> {
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb })
  try {
    const context = await isolate.createContext()
    const crypto = new HostCrypto()
    const host = new ivm.ExternalCopy({}).copyInto()
    await context.global.set('__plinthHost', host)
    const hostObject = (await context.global.get('__plinthHost')) as ivm.Reference<Record<string, unknown>>
    await hostObject.set(
      'log',
      new ivm.Reference((id: number, level: string, text: string) => {
        const request = requests.get(id)
        if (request !== undefined && request.logLines++ >= LOG_LINES_MAX) return
        send({ t: 'log', id, level, text: text.length > LOG_CHARS_MAX ? `${text.slice(0, LOG_CHARS_MAX)}…` : text })
      }),
    )
    await hostObject.set('random', new ivm.Reference((length: number) => new Uint8Array(randomBytes(Math.min(65536, length))).buffer))
    const call = async (
      id: number,
      op: string,
      json: string,
      bytes: ArrayBuffer | undefined,
    ): Promise<[string, ArrayBuffer | undefined]> => {
      if (op === 'sleep') {
        const ms = Math.max(0, Number((JSON.parse(json) as { ms: number }).ms) || 0)
        await new Promise((resolve) => setTimeout(resolve, ms))
        return ['{}', undefined]
      }
      if (op === 'subtle') return crypto.handle(json, bytes)
      return hostCall(id, op, json, bytes)
    }
    await hostObject.set(
      'call',
      // isolated-vm reports a promise that is already rejected when handed back as unhandled (which would
      // end this process): each is marked handled here; the isolate still gets the rejection.
      new ivm.Reference((id: number, op: string, json: string, bytes: ArrayBuffer | undefined) => {
        const answer = call(id, op, json, bytes)
        answer.catch(() => undefined)
        return answer
      }),
    )
    hostObject.release()
    await (await compileRuntime(isolate)).run(context, { timeout: 5000 })
    const compiled = await isolate.compileScript(code, { filename: FUNCTIONS_URL })
    await compiled.run(context, { timeout: 5000 })
    const invoke = (await context.global.get('__plinthInvoke', { reference: true })) as Site['invoke']
    return { script, isolate, invoke, inflight: new Map(), lastCpu: isolate.cpuTime, heapBytes: 0, stopped: null }
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose()
    throw error
  }
}

/** The code of a script, asked of the pool once however many requests wait for it. */
function codeOf(script: string): Promise<string | null> {
  return new Promise((resolve) => {
    const pending = loading.get(script)
    if (pending !== undefined) return void pending.waiters.push(resolve)
    loading.set(script, { waiters: [resolve] })
    send({ t: 'need', script })
  })
}

const starting = new Map<string, Promise<Site>>()

async function siteFor(script: string, memoryMb: number): Promise<{ site: Site; cold: boolean }> {
  const warm = sites.get(script)
  if (warm !== undefined && !warm.isolate.isDisposed) {
    // Most recently used last: Map order is the eviction order.
    sites.delete(script)
    sites.set(script, warm)
    return { site: warm, cold: false }
  }
  let started = starting.get(script)
  if (started === undefined) {
    started = (async () => {
      const code = await codeOf(script)
      if (code === null) throw new Error('the compiled functions of this version are missing')
      const site = await load(script, code, memoryMb)
      sites.set(script, site)
      evict()
      return site
    })()
    starting.set(script, started)
    started.finally(() => starting.delete(script)).catch(() => undefined)
  }
  return { site: await started, cold: true }
}

/** Lets go of the least recently used idle isolates past the count or heap cap. */
function evict(): void {
  let heap = 0
  for (const site of sites.values()) heap += site.heapBytes
  for (const [script, site] of sites) {
    if (sites.size <= MAX_SITES && heap <= MAX_HEAP_BYTES) break
    if (site.inflight.size > 0) continue
    heap -= site.heapBytes
    sites.delete(script)
    if (!site.isolate.isDisposed) site.isolate.dispose()
  }
}

/** Stops an isolate over a budget: every request in flight on it ends, the one over it named. */
function stop(site: Site, reason: 'cpu' | 'memory', culprit: InFlight | null, limits: FunctionLimits): void {
  if (site.stopped !== null) return
  site.stopped = reason
  if (sites.get(site.script) === site) sites.delete(site.script)
  if (!site.isolate.isDisposed) site.isolate.dispose()
  for (const request of [...site.inflight.values()]) {
    if (reason === 'cpu' && request !== culprit)
      request.settle({ limit: 'restarted', message: 'another request of this site went over its CPU limit and its isolate was restarted' })
    else if (reason === 'cpu') request.settle({ limit: 'cpu', message: `the function used more than ${limits.cpuMs} ms of CPU time` })
    else request.settle({ limit: 'memory', message: `the function used more than ${limits.memoryMb} MB of memory` })
  }
}

function watch(): void {
  if (watchdog !== undefined) return
  watchdog = setInterval(() => {
    if (requests.size === 0) {
      clearInterval(watchdog)
      watchdog = undefined
      return
    }
    const seen = new Set<Site>()
    for (const request of requests.values()) {
      const site = request.site
      if (seen.has(site) || site.isolate.isDisposed) continue
      seen.add(site)
      const cpu = site.isolate.cpuTime
      const share = Number(cpu - site.lastCpu) / Math.max(1, site.inflight.size)
      site.lastCpu = cpu
      for (const each of site.inflight.values()) {
        each.cpuNs += share
        const limits = each.limits
        if (each.cpuNs > limits.cpuMs * 1_000_000) {
          stop(site, 'cpu', each, limits)
          break
        }
      }
    }
  }, WATCH_MS)
}

async function invoke(message: Extract<FunctionRequest, { t: 'invoke' }>): Promise<void> {
  const { id, limits } = message
  let done = false
  const finish = (outcome: Outcome, cpuNs: number, cold: boolean) => {
    if (done) return
    done = true
    const request = requests.get(id)
    if (request !== undefined) {
      clearTimeout(request.wall)
      request.site.inflight.delete(id)
    }
    requests.delete(id)
    send({ t: 'done', id, outcome, cpuMs: Math.round(cpuNs / 10_000) / 100, cold })
  }
  let loaded: { site: Site; cold: boolean }
  try {
    loaded = await siteFor(message.script, limits.memoryMb)
  } catch (error) {
    return finish({ limit: 'load', message: describe(error) }, 0, true)
  }
  const { site, cold } = loaded
  const request: InFlight = {
    id,
    site,
    limits,
    cpuNs: 0,
    cold,
    logLines: 0,
    wall: setTimeout(
      () => finish({ limit: 'wall', message: `the function did not finish within ${limits.wallMs / 1000} s` }, request.cpuNs, cold),
      limits.wallMs,
    ),
    settle: (outcome) => finish(outcome, request.cpuNs, cold),
  }
  // The CPU the isolate used before this request (between requests: nothing of anyone's) is not its.
  if (site.inflight.size === 0) site.lastCpu = site.isolate.cpuTime
  site.inflight.set(id, request)
  requests.set(id, request)
  watch()
  try {
    const body = message.body === null ? undefined : new ivm.ExternalCopy(toArrayBuffer(message.body)).copyInto()
    const json = await site.invoke.apply(undefined, [id, message.head, body], {
      arguments: { copy: true },
      result: { promise: true, copy: true },
    })
    const answer = JSON.parse(json) as { ok: true } | { failure: { message: string; stack: string } }
    finish(answer, request.cpuNs, cold)
  } catch (error) {
    const text = describe(error)
    if (site.stopped === null && /memory limit/i.test(text)) stop(site, 'memory', request, limits)
    else if (site.isolate.isDisposed && site.stopped === null) stop(site, 'memory', request, limits)
    finish({ limit: 'restarted', message: `the function's isolate stopped: ${text}` }, request.cpuNs, cold)
  }
}

/** The bytes of a view as an ArrayBuffer of their own (what IPC hands over is a Buffer over the whole message). */
function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? (bytes.buffer as ArrayBuffer)
    : (new Uint8Array(bytes).buffer as ArrayBuffer)
}

if (process.send !== undefined) {
  process.on('message', (messages: FunctionRequest[]) => {
    for (const message of messages) take(message)
  })
  function take(message: FunctionRequest): void {
    if (message.t === 'invoke') void invoke(message)
    else if (message.t === 'code') {
      const pending = loading.get(message.script)
      loading.delete(message.script)
      for (const waiter of pending?.waiters ?? []) waiter(message.code)
    } else if (message.t === 'answer') {
      const call = calls.get(message.call)
      if (call === undefined) return
      calls.delete(message.call)
      if (message.error !== undefined) call.reject(new Error(message.error))
      else call.resolve([message.ok![0], message.ok![1] === null ? undefined : toArrayBuffer(message.ok![1])])
    }
  }
  // The server is gone: end at once (SIGKILL runs no teardown, which is the point; see the top).
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'))
  // Heap sizes for the eviction cap, refreshed now and then (reading them enters each isolate).
  setInterval(() => {
    for (const site of sites.values())
      if (!site.isolate.isDisposed && site.inflight.size === 0) site.heapBytes = site.isolate.getHeapStatisticsSync().used_heap_size
    evict()
  }, 5000).unref()
}
