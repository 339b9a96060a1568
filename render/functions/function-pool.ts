// The main thread's side of the functions processes (function.worker.ts): requests in, calls the main thread answers, results out.
import { fork, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import type { FunctionLimits, FunctionReply, FunctionRequest, Outcome } from './function.worker.js'

export type { FunctionLimits, Outcome } from './function.worker.js'

/** The operator's defaults (Cloudflare's Workers limits where they have one). */
export const DEFAULT_FUNCTION_LIMITS: FunctionLimits = { cpuMs: 50, wallMs: 30_000, memoryMb: 128 }

/** What the main thread does for one invocation: the answer's head and body, the calls out, its log lines. */
export interface InvocationHost {
  head(json: string): void
  /** The whole answer at once (head, the body, its end): a fixed answer, sent in one piece. */
  respond(json: string, body: Uint8Array | null): void
  /** Resolves once the chunk is on its way to the visitor (backpressure). */
  write(chunk: Uint8Array): Promise<void>
  /** The answer is whole (what the function handed to waitUntil may still run). */
  end(): void
  /** fetch, kv, assets: resolves with [json, bytes] or rejects with what to tell the function. */
  call(op: string, json: string, bytes: Uint8Array | null): Promise<[string, Uint8Array | null]>
  log(level: string, text: string): void
}

export interface InvocationResult {
  outcome: Outcome
  cpuMs: number
  cold: boolean
}

interface Worker {
  child: ChildProcess
  exited: boolean
  /** Messages for it this turn of the event loop: they go in one write (as its replies come). */
  outbox: FunctionRequest[]
}

interface Pending {
  worker: Worker
  host: InvocationHost
  resolve(result: InvocationResult): void
}

/**
 * Sites' functions, run in child processes (one per core, at most two): a compiled script always goes
 * to the same process, where its isolate stays warm. A process that dies fails what it had in flight
 * (each request answered) and is started again on the next request.
 */
export class FunctionPool {
  readonly #workers: (Worker | null)[]
  readonly #pending = new Map<number, Pending>()
  #nextId = 1
  #closed = false

  constructor(
    /** The compiled script of a hash (null when no version has it any more). */
    private readonly codeOf: (script: string) => string | null,
    options: { processes?: number } = {},
  ) {
    this.#workers = new Array<Worker | null>(options.processes ?? Math.min(2, Math.max(1, availableParallelism()))).fill(null)
  }

  /** Runs one request through a site's functions. Never rejects: every failure is an outcome. */
  invoke(script: string, head: string, body: Uint8Array | null, limits: FunctionLimits, host: InvocationHost): Promise<InvocationResult> {
    if (this.#closed) return Promise.resolve({ outcome: { limit: 'restarted', message: 'the server is stopping' }, cpuMs: 0, cold: false })
    const worker = this.#worker(script)
    const id = this.#nextId++
    return new Promise<InvocationResult>((resolve) => {
      this.#pending.set(id, { worker, host, resolve })
      this.#send(worker, { t: 'invoke', id, script, head, body, limits })
    })
  }

  /** Ends the processes (what they had in flight is answered as stopped). */
  async close(): Promise<void> {
    this.#closed = true
    const exits = this.#workers.flatMap((w) => (w === null || w.exited ? [] : [new Promise((r) => w.child.once('exit', r))]))
    for (const worker of this.#workers) worker?.child.kill('SIGKILL')
    await Promise.all(exits)
  }

  #worker(script: string): Worker {
    // The script's hash is hex: its first bytes pick the process.
    const slot = parseInt(script.slice(0, 8), 16) % this.#workers.length
    const existing = this.#workers[slot]
    if (existing !== null && !existing.exited) return existing
    const child = fork(new URL('./function.worker.js', import.meta.url), [], {
      execArgv: ['--no-node-snapshot'],
      serialization: 'advanced',
      // No secret of the server's environment reaches the process that runs site code.
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const worker: Worker = { child, exited: false, outbox: [] }
    child.on('message', (replies: FunctionReply[]) => {
      for (const reply of replies) this.#reply(worker, reply)
    })
    child.on('error', () => undefined)
    child.once('exit', (code, signal) => {
      worker.exited = true
      for (const [id, pending] of this.#pending) {
        if (pending.worker !== worker) continue
        this.#pending.delete(id)
        pending.resolve({
          outcome: { limit: 'restarted', message: `the functions process stopped (${signal ?? `exit ${code}`})` },
          cpuMs: 0,
          cold: false,
        })
      }
    })
    this.#workers[slot] = worker
    return worker
  }

  #send(worker: Worker, message: FunctionRequest): void {
    if (worker.exited) return
    if (worker.outbox.push(message) > 1) return
    setImmediate(() => {
      const messages = worker.outbox
      worker.outbox = []
      if (!worker.exited) worker.child.send(messages, (error) => error && worker.child.kill('SIGKILL'))
    })
  }

  #reply(worker: Worker, reply: FunctionReply): void {
    if (reply.t === 'need') {
      let code: string | null = null
      try {
        code = this.codeOf(reply.script)
      } catch {
        code = null
      }
      return this.#send(worker, { t: 'code', script: reply.script, code })
    }
    const pending = this.#pending.get(reply.id)
    if (pending === undefined) return
    if (reply.t === 'log') return pending.host.log(reply.level, reply.text)
    if (reply.t === 'done') {
      this.#pending.delete(reply.id)
      return pending.resolve({ outcome: reply.outcome, cpuMs: reply.cpuMs, cold: reply.cold })
    }
    // One-way: the answer's head, its end, or the whole of it (head, body and end) at once.
    if (reply.op === 'head') return pending.host.head(reply.json)
    if (reply.op === 'end') return pending.host.end()
    if (reply.op === 'respond') return pending.host.respond(reply.json, reply.bytes)
    // A call: the answer goes back whatever happens (the function is waiting on it).
    const answer = (ok: [string, Uint8Array | null] | null, error?: string) =>
      this.#send(worker, { t: 'answer', id: reply.id, call: reply.call, ...(ok === null ? { error } : { ok }) })
    const result: Promise<[string, Uint8Array | null]> =
      reply.op === 'write'
        ? pending.host.write(reply.bytes ?? new Uint8Array(0)).then(() => ['{}', null])
        : pending.host.call(reply.op, reply.json, reply.bytes)
    result.then(
      (ok) => answer(ok),
      (error: unknown) => answer(null, error instanceof Error ? error.message : String(error)),
    )
  }
}
