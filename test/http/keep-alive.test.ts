import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import type { LookupFunction } from 'node:net'
import { test } from 'node:test'
import { Agent as UndiciAgent, fetch as undiciFetchOf } from 'undici'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

/*
 * Keep-alive clients as agents and programs use them: Node's HTTP agent (keep-alive by default since
 * Node 19) and undici (Node's fetch, which the product's helper uses). Each round deploys and publishes
 * through the API, then sends 40 requests for the published site that ask to close their connection,
 * through the same client: the next round's API call goes out on a pooled connection. A server closes
 * a connection only between requests and says `Connection: close` on the answer when it does, so a
 * client never sends a request into a closing connection.
 */

const ROUNDS = 4
const CLOSING = 40

type Answer = { status: number; connection: string | null; body: string }
type Client = (s: TestServer, method: string, host: string, path: string, headers: Record<string, string>, body?: string) => Promise<Answer>

/** Node's http.request through one keep-alive agent. */
function nodeAgent(): { client: Client; close: () => void } {
  const agent = new Agent({ keepAlive: true })
  const client: Client = (s, method, host, path, headers, body) =>
    new Promise((resolve, reject) => {
      const sent = request({ host: '127.0.0.1', port: s.plinth.port, method, path, agent, headers: { host, ...headers } }, (res) => {
        let text = ''
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () =>
          resolve({ status: res.statusCode!, connection: (res.headers.connection as string | undefined) ?? null, body: text }),
        )
      })
      sent.on('error', (error: NodeJS.ErrnoException) =>
        reject(new Error(`${method} ${host}${path}: ${error.code} ${error.message}${sent.reusedSocket ? ' (a pooled connection)' : ''}`)),
      )
      sent.end(body)
    })
  return { client, close: () => agent.destroy() }
}

/**
 * undici's fetch (what Node's fetch is), one keep-alive pool per origin, every name resolved to this
 * machine (`*.localhost` is not in /etc/hosts here): the site is asked for by its own host's name.
 */
function undiciFetch(): { client: Client; close: () => Promise<void> } {
  const dispatcher = new UndiciAgent({
    connect: {
      lookup: ((_host: string, options: { all?: boolean }, done: (...args: unknown[]) => void) =>
        options.all === true ? done(null, [{ address: '127.0.0.1', family: 4 }]) : done(null, '127.0.0.1', 4)) as LookupFunction,
    },
  })
  const client: Client = async (s, method, host, path, headers, body) => {
    const res = await undiciFetchOf(`http://${host}:${s.plinth.port}${path}`, { method, headers, body, dispatcher }).catch(
      (error: Error) => {
        throw new Error(`${method} ${host}${path}: ${error.message} ${String((error.cause as Error | undefined)?.message ?? '')}`)
      },
    )
    return { status: res.status, connection: res.headers.get('connection'), body: await res.text() }
  }
  return { client, close: () => dispatcher.close() }
}

async function rounds(s: TestServer, client: Client): Promise<void> {
  const site = await createWebsite(s, { name: 'Kept alive', kind: 'static', subdomain: `kept-${Math.random().toString(36).slice(2, 8)}` })
  const api = { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' }
  for (let round = 1; round <= ROUNDS; round++) {
    const deployed = await client(
      s,
      'POST',
      '127.0.0.1',
      `/v1/websites/${site.id}/deploy/json`,
      api,
      JSON.stringify({ files: [{ path: 'index.html', content: `<h1>round ${round}</h1>` }] }),
    )
    assert.equal(deployed.status, 201, deployed.body)
    const published = await client(s, 'POST', '127.0.0.1', `/v1/websites/${site.id}/publish`, api)
    assert.equal(published.status, 200, published.body)
    // A pause that is the point (the recipe): the agent's sockets sit idle before the next burst.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const pages = await Promise.all(
      Array.from({ length: CLOSING }, () => client(s, 'GET', `${site.subdomain}.localhost`, '/', { connection: 'close' })),
    )
    for (const page of pages) {
      assert.deepEqual([page.status, page.body], [200, `<h1>round ${round}</h1>`])
      assert.equal(page.connection, 'close', 'an answer on a connection about to close says so')
    }
  }
}

for (const threads of ['1', '2']) {
  test(`PLINTH_SERVE_THREADS=${threads}: a keep-alive client (Node's agent, undici) whose requests ask to close never has a later request reset on a pooled connection`, async (t) => {
    const s = await startServer(t, { PLINTH_SERVE_THREADS: threads })
    const agent = nodeAgent()
    const undici = undiciFetch()
    t.after(agent.close)
    t.after(undici.close)
    await rounds(s, agent.client)
    await rounds(s, undici.client)
  })
}
