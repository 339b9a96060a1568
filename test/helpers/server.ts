import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, type TestContext } from 'node:test'
import { ManualClock } from '../../core/clock.js'
import { loadConfig } from '../../core/config.js'
import { silentLogger } from '../../core/log.js'
import { startPlinth, type Plinth, type PlinthOptions } from '../../plinth/start.js'
import { rawRequest, type RawResponse } from './http.js'

export const ADMIN_KEY = 'wb_' + 'T'.repeat(43)

/**
 * Every status an API answer carries must be one GET /openapi.json declares for its operation: the
 * server reports each answer that is not (REST, the anonymous endpoints, MCP; whatever client sent
 * the request), and the test that caused it fails when it ends.
 */
function statusCheck(t: TestContext, undeclared: string[]): void {
  const mark = undeclared.length
  t.after(() => {
    const fresh = undeclared.slice(mark)
    if (fresh.length > 0) throw new Error(`statuses the OpenAPI document does not declare:\n${[...new Set(fresh)].join('\n')}`)
  })
}

/** Directories a test's end could not remove, removed again when the test file's process exits. */
const leftovers = new Set<string>()
process.once('exit', () => {
  for (const dir of leftovers) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {
      // Left in the temporary directory: a throw here would fail the test file after its tests passed.
    }
  }
})

/**
 * A fresh temporary directory, removed when the test (or the file, for a file-wide scope) ends.
 * A test's `after` hooks run in the order they were added, so this one usually runs before the
 * hooks that stop what writes into the directory (a server process, a nats-server). Its removal then
 * races their writes (ENOTEMPTY): it never throws, since a hook that throws skips the hooks after it
 * and would leave those processes running (the test file then never ends); what is left is removed at exit.
 */
export function tempDir(t: { after(fn: () => unknown): void }, prefix = 'plinth-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {
      leftovers.add(dir)
    }
  })
  return dir
}

export interface ApiResponse<T = any> {
  status: number
  headers: Headers
  body: T
}

export interface TestServer {
  plinth: Plinth
  clock: ManualClock
  origin: string
  dataDir: string
  adminKey: string
  /** Calls the API with a key (the admin key unless `key` is given; `null` sends none). */
  api<T = any>(
    method: string,
    path: string,
    options?: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>
  /** A GET with an arbitrary Host header (for the hosting plane). */
  site(host: string, path: string, headers?: Record<string, string>): Promise<RawResponse>
}

/** Starts Plinth in-process on port 0 with a fresh data directory and a manual clock; closed when the test ends. */
export async function startServer(t: TestContext, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<TestServer> {
  const plinth = await startPlinthIn(t, env, options)
  statusCheck(t, plinth.undeclared)
  return view(plinth.plinth, plinth.clock, plinth.dataDir, ADMIN_KEY)
}

/** `log` replaces the silent logger, for a test that checks what the server logs. */
type ServerOptions = Pick<
  PlinthOptions,
  'renderIdleMs' | 'renderCpuBudgetMs' | 'toolLimits' | 'actorIdleMs' | 'anonymousSweepMs' | 'webhookPollMs' | 'mailPollMs' | 'log'
>

/**
 * One server for every test of a file (call it at the file's top level), started by the first test
 * that asks and closed after the file's last test: its worker pools stay warm, so a test costs what it tests rather than a cold
 * start of TypeScript, prettier and the render processes. Each test gets its own admin key (so its
 * own rate-limit buckets on the manual clock) and its own check of observed statuses against the
 * OpenAPI document. Tests of a shared server must not depend on its being fresh (use unique labels).
 */
export function sharedServer(env: Record<string, string> = {}, options: ServerOptions = {}): (t: TestContext) => Promise<TestServer> {
  let started: ReturnType<typeof startPlinthIn> | undefined
  // Registered now, at the file's top level: a hook registered inside a test would run after that test.
  const cleanups: (() => unknown)[] = []
  after(async () => {
    for (const fn of cleanups.reverse()) await fn()
  })
  return async (t) => {
    started ??= startPlinthIn({ after: (fn) => cleanups.push(fn) }, env, options)
    const { plinth, clock, dataDir, undeclared } = await started
    const admin = view(plinth, clock, dataDir, ADMIN_KEY)
    const key = await createKey(admin, { kind: 'organization', role: 'admin' }, { name: `test: ${t.name.slice(0, 80)}` })
    statusCheck(t, undeclared)
    return view(plinth, clock, dataDir, key.secret as string)
  }
}

async function startPlinthIn(scope: { after(fn: () => unknown): void }, env: Record<string, string>, options: ServerOptions) {
  const dataDir = tempDir(scope)
  const clock = new ManualClock()
  // One serving thread unless a test asks for more: a thread's page views are dated when they reach
  // the main thread, so tests that move the clock by hand between requests need them served there.
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    PLINTH_DATA_DIR: dataDir,
    PLINTH_ADMIN_KEY: ADMIN_KEY,
    PLINTH_SERVE_THREADS: '1',
    ...env,
  })
  const undeclared: string[] = []
  const plinth = await startPlinth({
    config,
    clock,
    log: silentLogger,
    validateResponses: true,
    onUndeclaredStatus: (what) => undeclared.push(what),
    ...options,
  })
  scope.after(() => plinth.close())
  return { plinth, clock, dataDir, undeclared }
}

/** The test's handle on a server: API calls with `key` unless told otherwise, and raw site requests. */
function view(plinth: Plinth, clock: ManualClock, dataDir: string, adminKey: string): TestServer {
  const origin = `http://127.0.0.1:${plinth.port}`
  return {
    plinth,
    clock,
    origin,
    dataDir,
    adminKey,
    async api(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers }
      const key = options.key === undefined ? adminKey : options.key
      if (key !== null) headers.authorization = `Bearer ${key}`
      let body: string | undefined
      if (options.raw !== undefined) body = options.raw
      else if (options.body !== undefined) body = JSON.stringify(options.body)
      if (body !== undefined) headers['content-type'] ??= 'application/json'
      const response = await fetch(origin + path, { method, headers, body })
      const text = await response.text()
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {
        // not JSON: keep the text
      }
      return { status: response.status, headers: response.headers, body: parsed as any }
    },
    site: (host, path, headers = {}) => rawRequest(plinth.port, host, path, headers),
  }
}

/** Creates a website as the admin and returns it. */
export async function createWebsite(server: TestServer, body: Record<string, unknown> = { name: 'Test site' }): Promise<any> {
  const res = await server.api('POST', '/v1/websites', { body })
  if (res.status !== 201) throw new Error(`create website failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Creates an API key as the admin and returns `{id, secret, ...}`. */
export async function createKey(server: TestServer, access: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await server.api('POST', '/v1/api-keys', { body: { access, ...extra } })
  if (res.status !== 201) throw new Error(`create key failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
