import assert from 'node:assert/strict'
import type { ApiResponse, TestServer } from './server.js'
import { API_POLL_MS, waitUntil } from './wait.js'

export const HOUR = 60 * 60 * 1000
export const DAY = 24 * HOUR

/** An agent without an account: one anonymous token, and the calls it makes with it. */
export class AnonymousAgent {
  token = ''

  constructor(
    readonly server: TestServer,
    readonly headers: Record<string, string> = {},
  ) {}

  /** Issues the credential (201) and keeps its token. */
  async issue(): Promise<this> {
    const issued = await this.server.api('POST', '/public/v1/anonymous/credentials', { key: null, headers: this.headers })
    assert.equal(issued.status, 201, JSON.stringify(issued.body))
    assert.match(issued.body.token, /^wa_[A-Za-z0-9_-]{43}$/)
    this.token = issued.body.token
    return this
  }

  call(method: string, path: string, body?: unknown): Promise<ApiResponse> {
    return this.server.api(method, path, { key: this.token, body, headers: this.headers })
  }

  create(body: Record<string, unknown>): Promise<ApiResponse> {
    return this.call('POST', '/public/v1/anonymous/sites', body)
  }

  status(id = 'current'): Promise<ApiResponse> {
    return this.call('GET', `/public/v1/anonymous/sites/${id}`)
  }

  update(id: string, body: Record<string, unknown>): Promise<ApiResponse> {
    return this.call('PUT', `/public/v1/anonymous/sites/${id}`, body)
  }

  /** Polls the status until it is no longer building (a framework build), on real time. */
  async settled(id = 'current'): Promise<ApiResponse> {
    // Polled within the reads bucket (120, then 10 a second), which the requests after it draw from too.
    return waitUntil(
      async () => {
        const current = await this.status(id)
        return current.body.status !== 'building' && current
      },
      `the build of ${id} to finish`,
      30_000,
      API_POLL_MS,
    )
  }
}

/** A static site body of `files` (path to content). */
export function staticSite(name: string, files: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, kind: 'static', files: Object.entries(files).map(([path, content]) => ({ path, content })), ...extra }
}

/** The host of a live URL (`http://label.localhost:port/` to `label.localhost`). */
export function hostOf(url: string): string {
  return new URL(url).hostname
}
