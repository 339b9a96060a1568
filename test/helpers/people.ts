import assert from 'node:assert/strict'
import type { TestServer } from './server.js'

/** A person driving the dashboard over plain HTTP: a cookie jar and the dashboard's Origin. */
export class Browserless {
  cookie = ''

  constructor(
    readonly server: TestServer,
    /** The dashboard's origin (`http://localhost:{port}` on a test server). */
    readonly appOrigin = `http://localhost:${server.plinth.port}`,
  ) {}

  /** A form POST to a dashboard page (path under the API origin, e.g. `/app/sign-in`). */
  async post(path: string, form: Record<string, string>, options: { origin?: string | null } = {}): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
    const origin = options.origin === undefined ? this.appOrigin : options.origin
    if (origin !== null) headers.origin = origin
    if (this.cookie !== '') headers.cookie = this.cookie
    const response = await fetch(this.server.origin + path, {
      method: 'POST',
      headers,
      body: new URLSearchParams(form),
      redirect: 'manual',
    })
    this.#keep(response)
    return response
  }

  async get(pathOrUrl: string): Promise<Response> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl.replace(this.appOrigin, this.server.origin) : this.server.origin + pathOrUrl
    const response = await fetch(url, { headers: this.cookie === '' ? {} : { cookie: this.cookie }, redirect: 'manual' })
    this.#keep(response)
    return response
  }

  #keep(response: Response): void {
    const set = response.headers.get('set-cookie')
    if (set === null) return
    // plinth_session over http, __Host-plinth_session over https.
    const match = /^((?:__Host-)?plinth_session)=([^;]*)/.exec(set)
    this.cookie = match === null || match[2] === '' ? '' : `${match[1]}=${match[2]}`
  }

  async signIn(email: string, password: string): Promise<void> {
    const response = await this.post('/app/sign-in', { email, password })
    assert.equal(response.status, 303, `sign-in of ${email} failed: ${response.status} ${await response.text()}`)
  }

  /** An API call with the session (and the dashboard's Origin unless told otherwise). */
  api(method: string, path: string, body?: unknown, options: { origin?: string | null; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { cookie: this.cookie, ...options.headers }
    const origin = options.origin === undefined ? this.appOrigin : options.origin
    if (origin !== null) headers.origin = origin
    return this.server.api(method, path, { key: null, body, headers })
  }
}

/** Sets up the owner of the first start through the setup link; returns them signed in. */
export async function setUpOwner(server: TestServer, email = 'owner@example.com', password = 'owner-password-1'): Promise<Browserless> {
  const code = server.plinth.installation.setupCode
  assert.ok(code !== null, 'the first start makes a setup code')
  const owner = new Browserless(server)
  const response = await owner.post('/app/setup', { token: code, email, name: 'Olive Owner', password })
  assert.equal(response.status, 303, await response.text())
  return owner
}

/** Adds a person (as `plinth user add` does) and signs them in. */
export async function addPerson(
  server: TestServer,
  email: string,
  password = 'person-password-1',
  name = email.split('@')[0],
): Promise<Browserless> {
  await server.plinth.registry.people.addPerson({ email, name, password })
  const person = new Browserless(server)
  await person.signIn(email, password)
  return person
}

/** The hidden and chosen fields of the first form of a page. */
export function formFields(page: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const match of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[match[1]] = decodeEntities(match[2])
  return fields
}

function decodeEntities(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}
