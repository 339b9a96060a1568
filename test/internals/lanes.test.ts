import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/**
 * Every command on a website, whichever concern it touches, runs in that website's one lane: while a
 * command of the website's actor is running, its deploys, domains, CMS, password, form settings,
 * analytics sharing, assets and shared files wait their turn; another website's commands do not.
 */
/** Commands queued or running in every mailbox, as /metrics reports them. */
async function queuedCommands(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).text()
  return Number(/^plinth_mailbox_queued (\d+)$/m.exec(text)?.[1])
}

test("a website's commands of every concern share one lane; another website's do not wait", async (t) => {
  const server = await startServer(t)
  const { registry } = server.plinth
  const busy = await createWebsite(server, { name: 'busy', kind: 'static', subdomain: 'busy' })
  const other = await createWebsite(server, { name: 'other', kind: 'static', subdomain: 'other' })
  const queued = () => queuedCommands(server)
  assert.equal(await queued(), 0)

  // A command of the website's actor that runs until the test lets it go.
  let release!: () => void
  const running = registry.website(busy.id)!.mailbox.run(() => new Promise<void>((resolve) => (release = resolve)))

  const deploy = { files: [{ path: 'index.html', content: 'hello' }] }
  const calls: [string, string, unknown][] = [
    ['POST', `/v1/websites/${busy.id}/deploy/json`, deploy],
    ['POST', `/v1/websites/${busy.id}/domains`, { hostname: 'busy.example.com' }],
    ['POST', `/v1/websites/${busy.id}/collections`, { name: 'Notes', fields: [{ name: 'Text', type: 'text' }] }],
    ['PUT', `/v1/websites/${busy.id}/password`, { password: 'open sesame' }],
    ['POST', `/v1/websites/${busy.id}/forms/webhook-secret`, undefined],
    ['POST', `/v1/websites/${busy.id}/analytics/share`, undefined],
  ]
  const answered: string[] = []
  const waiting: Promise<{ status: number; body: unknown }>[] = calls.map(([method, path, body]) =>
    server.api(method, path, body === undefined ? {} : { body }).then((response) => {
      answered.push(path)
      return response
    }),
  )
  // An asset, whose bytes are checked before it takes its turn.
  const form = new FormData()
  form.set('file', new Blob(['notes'], { type: 'text/plain' }), 'notes.txt')
  waiting.push(
    fetch(`${server.origin}/v1/websites/${busy.id}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminKey}` },
      body: form,
    }).then(async (response) => {
      answered.push('assets')
      return { status: response.status, body: await response.json() }
    }),
  )
  // Each of them is queued behind the running command (the gauge counts queued and running commands).
  await waitUntil(async () => (await queued()) === calls.length + 2, 'every command queued in the lane', 15_000, API_POLL_MS)

  // Another website's commands run meanwhile.
  assert.equal((await server.api('POST', `/v1/websites/${other.id}/deploy/json`, { body: deploy })).status, 201)
  assert.equal((await server.api('POST', `/v1/websites/${other.id}/domains`, { body: { hostname: 'other.example.com' } })).status, 201)
  assert.deepEqual(answered, [], 'nothing of the busy website answered while its lane was taken')

  release()
  await running
  const responses = await Promise.all(waiting)
  assert.deepEqual(
    responses.map((r) => r.status),
    [201, 201, 201, 200, 200, 201, 201],
    JSON.stringify(responses.map((r) => r.body)),
  )
  assert.equal(await queued(), 0)
})

test("a storage website's file commands run in its own lane: another storage website's uploads do not wait", async (t) => {
  const server = await startServer(t)
  const busy = await createWebsite(server, { name: 'busy files', kind: 'storage', subdomain: 'busy-files' })
  const other = await createWebsite(server, { name: 'other files', kind: 'storage', subdomain: 'other-files' })
  let release!: () => void
  const running = server.plinth.registry.website(busy.id)!.mailbox.run(() => new Promise<void>((resolve) => (release = resolve)))
  const begin = { files: [{ name: 'a.txt', byteSize: 5 }] }
  let answered = false
  const waiting = server.api('POST', `/v1/websites/${busy.id}/objects/uploads`, { body: begin }).then((response) => {
    answered = true
    return response
  })
  await waitUntil(async () => (await queuedCommands(server)) === 2, 'the upload queued in the lane', 15_000, API_POLL_MS)
  assert.equal((await server.api('POST', `/v1/websites/${other.id}/objects/uploads`, { body: begin })).status, 201)
  assert.equal(answered, false, 'the busy website began nothing while its lane was taken')
  release()
  await running
  assert.equal((await waiting).status, 201)
})

test("a command that waited behind its website's purge changes nothing and says the website is gone", async (t) => {
  const server = await startServer(t)
  const { registry } = server.plinth
  const doomed = await createWebsite(server, { name: 'doomed', kind: 'static', subdomain: 'doomed' })
  let release!: () => void
  const running = registry.website(doomed.id)!.mailbox.run(() => new Promise<void>((resolve) => (release = resolve)))
  // The purge (as an anonymous site's expiry runs it) queues first, a domain and a password behind it.
  const purged = registry.purgeWebsite(doomed.id, { kind: 'anonymous', id: 'anon_expiry', name: null })
  await waitUntil(async () => (await queuedCommands(server)) === 2, 'the purge queued in the lane', 15_000, API_POLL_MS)
  const domain = server.api('POST', `/v1/websites/${doomed.id}/domains`, { body: { hostname: 'doomed.example.com' } })
  const password = server.api('PUT', `/v1/websites/${doomed.id}/password`, { body: { password: 'open sesame' } })
  await waitUntil(async () => (await queuedCommands(server)) === 4, 'the commands queued behind the purge', 15_000, API_POLL_MS)
  release()
  await running
  await purged
  for (const response of [await domain, await password]) {
    assert.equal(response.status, 404, JSON.stringify(response.body))
    assert.match(response.body.message, /was deleted for good while this waited for its turn; nothing was changed/)
  }
  // Nothing of it was written: the name is free for another website, and no password row is left.
  assert.equal(server.plinth.store.domainsByHost.get('doomed.example.com'), undefined)
  assert.equal([...server.plinth.store.domains.range({ start: '', end: '\uffff' })].length, 0)
  assert.equal(server.plinth.store.sitePasswords.get(doomed.id), undefined)
})
