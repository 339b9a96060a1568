import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { OutboundGuard } from '../../actors/outbound.js'
import { ManualClock } from '../../core/clock.js'
import { loadConfig } from '../../core/config.js'
import { silentLogger } from '../../core/log.js'
import { startPlinth } from '../../plinth/start.js'
import { rawPost } from '../helpers/http.js'
import { ADMIN_KEY, createWebsite, startServer, tempDir, type TestServer } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/** A webhook receiver on a loopback port: records what arrives, answers with the next queued status. */
async function receiver(t: TestContext) {
  const received: { headers: IncomingMessage['headers']; body: string }[] = []
  const statuses: number[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      received.push({ headers: req.headers, body })
      res.writeHead(statuses.shift() ?? 200).end('ok')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => new Promise<void>((r) => server.close(() => r())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, statuses }
}

/** A framework site whose website_config declares `contact` with a webhook. */
async function siteWithWebhook(server: TestServer, label: string, webhook: string): Promise<string> {
  const site = await createWebsite(server, { name: label, kind: 'framework', subdomain: label })
  const lease = (await server.api('POST', `/v1/websites/${site.id}/source/lease`)).body.leaseToken
  const put = (file: Record<string, string>, content: string) =>
    server.api('PUT', `/v1/websites/${site.id}/source/file`, { body: { leaseToken: lease, file, content } })
  await put(
    { type: 'website_config' },
    `import { defineWebsiteConfig } from '@platform'\nexport default defineWebsiteConfig({ forms: { contact: { webhook: ${JSON.stringify(webhook)} } } })\n`,
  )
  const head = (
    await put(
      { type: 'page', name: 'home' },
      "import { definePage } from '@platform'\nexport default definePage({ route: '/', metadata: { title: 'Hook' }, render: () => <main>hook</main> })\n",
    )
  ).body.version
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/deployments/ensure`, { body: { version: head } })).body.status, 'ready')
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  return site.id
}

const submit = (port: number, host: string, fields: Record<string, string>) =>
  rawPost(port, host, '/_platform/forms/contact', new URLSearchParams(fields).toString(), {
    'content-type': 'application/x-www-form-urlencoded',
  })

async function waitFor(condition: () => Promise<boolean> | boolean): Promise<void> {
  await waitUntil(condition, 'the webhook condition')
}

test('a kept submission reaches the webhook signed with the website’s secret; a failure is retried with backoff; spam is never forwarded', async (t) => {
  const hook = await receiver(t)
  const server = await startServer(t, { PLINTH_OUTBOUND_ALLOW: '127.0.0.1' }, { webhookPollMs: 20 })
  const websiteId = await siteWithWebhook(server, 'hooked', hook.url)
  hook.statuses.push(500)
  assert.equal((await submit(server.plinth.port, 'hooked.localhost', { name: 'Ada', message: 'Hi' })).status, 200)
  assert.equal((await submit(server.plinth.port, 'hooked.localhost', { name: 'Bot', _honey: 'x' })).status, 200)
  await waitFor(() => hook.received.length === 1)
  const first = hook.received[0]
  const payload = JSON.parse(first.body)
  assert.equal(payload.form, 'contact')
  assert.deepEqual(payload.website, { id: websiteId, name: 'hooked' })
  assert.deepEqual(payload.submission.data, { name: 'Ada', message: 'Hi' })
  const secret = (await server.api('GET', `/v1/websites/${websiteId}/forms`)).body.webhookSigning.secret
  const [, t0, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(first.headers['x-platform-signature'] as string)!
  assert.equal(
    v1,
    createHmac('sha256', secret).update(`${t0}.${first.body}`).digest('hex'),
    'the signature checks out with the secret the API shows',
  )

  // The 500 is recorded; nothing more is sent before the backoff, then the retry delivers.
  const submissionOf = async () => (await server.api('GET', `/v1/websites/${websiteId}/forms/contact/submissions?spam=false`)).body.items[0]
  await waitFor(async () => (await submissionOf()).webhook.attempts.length === 1)
  assert.deepEqual([(await submissionOf()).webhook.state, (await submissionOf()).webhook.attempts[0].status], ['pending', 500])
  // A pause that is the point: nothing more is sent before the backoff.
  await new Promise((r) => setTimeout(r, 100))
  assert.equal(hook.received.length, 1, 'no retry before the backoff')
  server.clock.advance(31_000)
  await waitFor(() => hook.received.length === 2)
  await waitFor(async () => (await submissionOf()).webhook.state === 'delivered')
  assert.equal(hook.received[1].body, first.body, 'the retry sends the same bytes')
  // A pause that is the point: a webhook for the spam submission would have come by now.
  await new Promise((r) => setTimeout(r, 100))
  assert.equal(hook.received.length, 2, 'the spam submission was never forwarded')

  // A rotated secret signs what follows; the old one no longer verifies it.
  const rotated = await server.api('POST', `/v1/websites/${websiteId}/forms/webhook-secret`)
  assert.equal(rotated.status, 200)
  assert.notEqual(rotated.body.secret, secret)
  assert.equal((await server.api('GET', `/v1/websites/${websiteId}/forms`)).body.webhookSigning.secret, rotated.body.secret)
  await submit(server.plinth.port, 'hooked.localhost', { name: 'After' })
  await waitFor(() => hook.received.length === 3)
  const third = hook.received[2]
  const [, t3, v3] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(third.headers['x-platform-signature'] as string)!
  assert.equal(v3, createHmac('sha256', rotated.body.secret).update(`${t3}.${third.body}`).digest('hex'))
  assert.notEqual(v3, createHmac('sha256', secret).update(`${t3}.${third.body}`).digest('hex'))
})

test('the SSRF guard: a webhook to a loopback address is refused unless the operator allows it, retried, and given up after 24 hours', async (t) => {
  const hook = await receiver(t)
  const server = await startServer(t, {}, { webhookPollMs: 20 })
  const websiteId = await siteWithWebhook(server, 'guarded', hook.url)
  await submit(server.plinth.port, 'guarded.localhost', { name: 'Ada' })
  const submissionOf = async () => (await server.api('GET', `/v1/websites/${websiteId}/forms/contact/submissions`)).body.items[0]
  await waitFor(async () => (await submissionOf()).webhook.attempts.length === 1)
  const attempt = (await submissionOf()).webhook.attempts[0]
  assert.equal(attempt.status, null)
  assert.match(attempt.error, /127\.0\.0\.1 is not a public internet address/)
  assert.equal(hook.received.length, 0)
  for (let i = 0; i < 40 && (await submissionOf()).webhook.state === 'pending'; i++) {
    server.clock.advance(60 * 60 * 1000)
    const attempts = (await submissionOf()).webhook.attempts.length
    await waitFor(async () => (await submissionOf()).webhook.attempts.length > attempts)
  }
  assert.equal((await submissionOf()).webhook.state, 'failed', 'given up after its 24 hours')
  assert.equal(hook.received.length, 0)

  // The guard itself: private, link-local (cloud metadata), CGNAT and mapped addresses are refused.
  const guard = new OutboundGuard([])
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '::1',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '0.0.0.0',
  ]) {
    assert.equal(guard.permits(address), false, address)
  }
  for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']) assert.equal(guard.permits(address), true, address)
  await assert.rejects(guard.request('ftp://example.com/x', { method: 'POST', headers: {}, body: '' }), /only http and https/)
  const viaName = new OutboundGuard([], async () => [{ address: '10.0.0.5', family: 4 }])
  await assert.rejects(
    viaName.request('http://internal.example/hook', { method: 'POST', headers: {}, body: '' }),
    (error: Error) => /internal\.example is not reachable from here/.test(error.message) && !error.message.includes('10.0.0.5'),
  )

  // With loopback allowed: a redirect is answered, never followed; an answer over 64 KiB is cut.
  const hits: string[] = []
  const target = createServer((req, res) => {
    hits.push(req.url ?? '')
    if (req.url === '/moved') return res.writeHead(302, { location: '/elsewhere' }).end()
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(200 * 1024))
  })
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r))
  t.after(() => new Promise<void>((r) => target.close(() => r())))
  const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`
  const allowed = new OutboundGuard(['127.0.0.1'])
  const moved = await allowed.request(`${base}/moved`, { method: 'POST', headers: {}, body: '{}' })
  assert.equal(moved.status, 302)
  assert.deepEqual(hits, ['/moved'], 'the redirect was not followed')
  const big = await allowed.request(`${base}/big`, { method: 'POST', headers: {}, body: '{}' })
  assert.deepEqual([big.status, big.body.length, big.truncated], [200, 64 * 1024, true])
})

test('a pending delivery survives a restart and is delivered by the next process', async (t) => {
  const hook = await receiver(t)
  const dir = tempDir(t)
  const clock = new ManualClock()
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    PLINTH_DATA_DIR: dir,
    PLINTH_ADMIN_KEY: ADMIN_KEY,
    PLINTH_OUTBOUND_ALLOW: '127.0.0.1',
  })
  const first = await startPlinth({ config, clock, log: silentLogger, webhookPollMs: 0 })
  const api = (port: number) => ({
    plinth: { port },
    api: (method: string, path: string, options: { body?: unknown } = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
  })
  const websiteId = await siteWithWebhook(api(first.port) as unknown as TestServer, 'durable-hook', hook.url)
  assert.equal((await submit(first.port, 'durable-hook.localhost', { name: 'Kept' })).status, 200)
  await first.close()
  assert.equal(hook.received.length, 0, 'the first process never sent it')

  const second = await startPlinth({ config, clock, log: silentLogger, webhookPollMs: 20 })
  t.after(() => second.close())
  await waitFor(() => hook.received.length === 1)
  assert.equal(JSON.parse(hook.received[0].body).submission.data.name, 'Kept')
  await waitFor(
    async () =>
      (await api(second.port).api('GET', `/v1/websites/${websiteId}/forms/contact/submissions`)).body.items[0].webhook.state ===
      'delivered',
  )
})
