import assert from 'node:assert/strict'
import { createVerify, generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { caddyGlobals, needsCaddy, startCaddy } from '../helpers/caddy.js'
import { dnsServer } from '../helpers/dns.js'
import { freePort } from '../helpers/http.js'
import { spawnPlinth } from '../helpers/process.js'
import { ADMIN_KEY, createKey, createWebsite, startServer, tempDir, type TestServer } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * Namespaces and vanity addresses, as the product's skill uses them: a workspace takes a namespace and
 * each published site also answers at {label}.{namespace}.{site domain}; renames end old addresses at
 * once and are limited; flat subdomains and namespaces share one name space. And connect_domain: Domain
 * Connect discovery against a real DNS server and a provider's settings endpoint (Caddy, HTTPS).
 */

async function publish(s: TestServer, name: string, html: string, subdomain?: string) {
  const site = await createWebsite(s, { name, kind: 'static', ...(subdomain === undefined ? {} : { subdomain }) })
  assert.equal(
    (await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: html }] } })).status,
    201,
  )
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  return site
}

const page = async (s: TestServer, host: string) => {
  const res = await s.site(host, '/')
  return `${res.status} ${res.status === 200 ? res.body.toString() : ''}`.trim()
}

test('a namespace: each published site also answers at {label}.{namespace}, urls.vanity, primary and all say so; renames end the old addresses at once, are limited, and share one name space with subdomains', async (t) => {
  const s = await startServer(t, { PLINTH_NAMESPACE_RENAMES: '1' })
  const band = await publish(s, 'Fall Out Boy', '<h1>band</h1>')
  const draft = await createWebsite(s, { name: 'Not Yet', kind: 'static' })

  const none = await s.api('GET', '/v1/namespace')
  assert.equal(none.status, 200)
  assert.equal(none.body.namespace, null)
  assert.match(none.body.next.message, /check_namespace.*rename_namespace/)
  assert.deepEqual((await s.api('GET', `/v1/websites/${band.id}`)).body.urls.vanity, null)

  // One name space: a site's subdomain is no namespace, and a namespace no site's subdomain.
  const taken = await s.api('GET', `/v1/namespace/check?name=${band.subdomain}`)
  assert.deepEqual([taken.body.available, /a site's subdomain/.test(taken.body.reason)], [false, true])
  assert.equal((await s.api('PUT', '/v1/namespace', { body: { name: band.subdomain } })).status, 409)
  assert.equal((await s.api('GET', '/v1/namespace/check?name=Bad Name')).body.available, false)
  assert.deepEqual((await s.api('GET', '/v1/namespace/check?name=kev')).body, { name: 'kev', available: true, reason: null })

  const made = await s.api('PUT', '/v1/namespace', { body: { name: 'kev' } })
  assert.equal(made.status, 200, JSON.stringify(made.body))
  assert.deepEqual(
    [made.body.namespace.name, made.body.namespace.certificate, made.body.namespace.renames],
    ['kev', 'pending', { used: 0, limit: 1, left: 1 }],
  )
  assert.match(made.body.next.message, /get_namespace again until certificate is active/)
  const site = (await s.api('GET', `/v1/websites/${band.id}`)).body
  const port = s.plinth.port
  assert.deepEqual(site.urls, {
    draft: `http://draft--fall-out-boy.localhost:${port}`,
    published: `http://fall-out-boy.localhost:${port}`,
    vanity: `http://fall-out-boy.kev.localhost:${port}`,
    primary: `http://fall-out-boy.kev.localhost:${port}`,
    all: [`http://fall-out-boy.localhost:${port}`, `http://fall-out-boy.kev.localhost:${port}`],
  })
  assert.equal(await page(s, 'fall-out-boy.kev.localhost'), '200 <h1>band</h1>')
  // An unpublished site has no live address yet; a storage site's one address is its own.
  assert.deepEqual((await s.api('GET', `/v1/websites/${draft.id}`)).body.urls.vanity, null)
  assert.equal((await s.api('POST', '/v1/websites', { body: { name: 'Kev', kind: 'static', subdomain: 'kev' } })).status, 409)

  // The front's on-demand TLS asks for a vanity address: its namespace's certificate is active.
  const ask = (host: string) => fetch(`${s.origin}/_platform/tls/ask?domain=${host}`).then((r) => r.status)
  assert.equal(await ask('fall-out-boy.kev.localhost'), 200)
  assert.equal(await ask('nobody.kev.localhost'), 404)
  await waitUntil(async () => (await s.api('GET', '/v1/namespace')).body.namespace.certificate === 'active', 'the certificate to be active')

  // A vanity rename: the new label answers, the old one stops at once; one rename, then none left.
  const renamed = await s.api('PATCH', `/v1/websites/${band.id}/vanity`, { body: { label: 'fob' } })
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body))
  assert.equal(renamed.body.vanity, `http://fob.kev.localhost:${port}`)
  assert.deepEqual(renamed.body.renames, { used: 1, limit: 1, left: 0 })
  assert.equal(await page(s, 'fob.kev.localhost'), '200 <h1>band</h1>')
  assert.equal(await page(s, 'fall-out-boy.kev.localhost'), '404')
  const again = await s.api('PATCH', `/v1/websites/${band.id}/vanity`, { body: { label: 'fob2' } })
  assert.deepEqual([again.status, again.body.details?.reason], [409, 'rename_limit'])
  // Unique within the namespace: another site cannot take the label.
  const other = await publish(s, 'Other Band', '<h1>other</h1>')
  assert.equal(await page(s, `${other.subdomain}.kev.localhost`), '200 <h1>other</h1>')
  const clash = await s.api('PATCH', `/v1/websites/${other.id}/vanity`, { body: { label: 'fob' } })
  assert.equal(clash.status, 409)
  assert.match(clash.body.message, /Another site of this namespace answers at "fob"/)

  // A namespace rename: every old vanity address ends at once; the certificate is pending again.
  const moved = await s.api('PUT', '/v1/namespace', { body: { name: 'kevin' } })
  assert.equal(moved.status, 200, JSON.stringify(moved.body))
  assert.match(moved.body.next.message, /Renamed from kev: every address under kev\.localhost stopped working at once/)
  assert.equal(moved.body.namespace.certificate, 'pending')
  assert.equal(await page(s, 'fob.kevin.localhost'), '200 <h1>band</h1>')
  assert.equal(await page(s, 'fob.kev.localhost'), '404')
  assert.equal(await ask('fob.kev.localhost'), 404)
  // The old name is free for anyone again; the limit holds.
  assert.equal((await s.api('GET', '/v1/namespace/check?name=kev')).body.available, true)
  const over = await s.api('PUT', '/v1/namespace', { body: { name: 'kevo' } })
  assert.deepEqual([over.status, over.body.details?.reason], [409, 'rename_limit'])

  // The audit log names each change.
  const events = (await s.api('GET', '/v1/audit-log')).body.items.map((e: any) => e.eventType)
  for (const type of ['namespace.taken', 'namespace.renamed', 'website.vanity_renamed']) assert.ok(events.includes(type), type)
})

test('with billing on, a namespace needs a paid plan (402 with upgradeUrl); Base renames once, then a bigger plan is the way', async (t) => {
  const s = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_STRIPE_SECRET_KEY: 'sk_test_namespaces' })
  const free = await s.api('PUT', '/v1/namespace', { body: { name: 'freebie' } })
  assert.deepEqual([free.status, free.body.details?.reason], [402, 'plan_required'])
  assert.match(free.body.details.upgradeUrl, /\/billing$/)
  await s.plinth.registry.plans.set({ kind: 'api_key', id: 'test', name: 'test' }, s.plinth.installation.orgId, 'base')
  assert.equal((await s.api('PUT', '/v1/namespace', { body: { name: 'paid' } })).status, 200)
  assert.equal((await s.api('PUT', '/v1/namespace', { body: { name: 'paid-two' } })).status, 200)
  const third = await s.api('PUT', '/v1/namespace', { body: { name: 'paid-three' } })
  assert.deepEqual([third.status, third.body.details?.reason, third.body.details?.limit], [402, 'plan_limit', 1])
})

test('the namespace tools and connect_domain are in the MCP list of a key that may call them, and not of one that may not', async (t) => {
  const s = await startServer(t)
  const names = async (key: string) => {
    const client = new Client({ name: 'plinth-namespaces-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${s.origin}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    )
    t.after(() => client.close())
    return new Set((await client.listTools()).tools.map((tool) => tool.name))
  }
  const five = ['get_namespace', 'check_namespace', 'rename_namespace', 'rename_vanity', 'connect_domain']
  const admin = await names(ADMIN_KEY)
  for (const name of five) assert.ok(admin.has(name), `${name} listed for an admin key`)
  const reader = await createKey(s, { kind: 'organization', role: 'content_editor' }, { name: 'reader' })
  const listed = await names(reader.secret)
  for (const name of five) assert.ok(!listed.has(name), `${name} not listed for a content editor`)
})

test(
  'connect_domain: the DNS provider found with Domain Connect (a real DNS server, the provider’s settings over HTTPS), its control panel, dns.records and apexForward; with the operator’s template, a signed apply link',
  { skip: needsCaddy },
  async (t) => {
    const dns = await dnsServer(t)
    const [httpPort, httpsPort] = [await freePort(), await freePort()]
    const provider = `dc.provider.test:${httpsPort}`
    const settings = {
      providerId: 'provider.test',
      providerName: 'provider',
      providerDisplayName: 'Provider Inc',
      urlSyncUX: `https://${provider}/sync`,
      urlAPI: `https://${provider}/api`,
      urlControlPanel: 'https://panel.provider.test/dns?domain=%domain%',
    }
    const caddy = await startCaddy(
      t,
      (storage) => `${caddyGlobals(storage, httpPort, httpsPort)}
https://dc.provider.test:${httpsPort} {
\ttls internal
\trespond /v2/bakery.test/settings \`${JSON.stringify(settings)}\` 200
\trespond /api/v2/domainTemplates/providers/plinth.test/services/website 200
\trespond 404
}
`,
    )
    dns.zone['_domainconnect.bakery.test'] = { TXT: [provider] }
    dns.zone['dc.provider.test'] = { A: ['127.0.0.1'] }
    const dir = tempDir(t)
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    writeFileSync(join(dir, 'dc.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
    const base = {
      PLINTH_ADMIN_KEY: ADMIN_KEY,
      PLINTH_DNS_SERVERS: dns.address,
      PLINTH_OUTBOUND_ALLOW: '127.0.0.1',
      PLINTH_DOMAIN_TARGET: 'sites.plinth.test',
      // The provider's certificate comes from Caddy's own CA, which the server trusts here as a real one.
      NODE_EXTRA_CA_CERTS: caddy.rootCertificate,
    }
    const connect = async (env: Record<string, string>) => {
      const plinth = await spawnPlinth(t, { ...base, PLINTH_DATA_DIR: tempDir(t), ...env })
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${plinth.port}${path}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, body: (await res.json()) as any }
      }
      const site = await api('POST', '/v1/websites', { name: 'Shop', kind: 'static' })
      const domain = await api('POST', `/v1/websites/${site.body.id}/domains`, { hostname: 'www.bakery.test' })
      assert.equal(domain.status, 201, JSON.stringify(domain.body))
      const connected = await api('POST', `/v1/websites/${site.body.id}/domains/${domain.body.id}/connect`)
      assert.equal(connected.status, 200, JSON.stringify(connected.body))
      return { connected: connected.body, domain: domain.body }
    }

    // Without a template: the provider and its panel, the records exactly as add_domain gave them, the apex forward.
    const plain = await connect({})
    assert.deepEqual(
      plain.connected.provider,
      {
        id: 'provider.test',
        name: 'Provider Inc',
        controlPanel: 'https://panel.provider.test/dns?domain=bakery.test',
      },
      plain.connected.next.message,
    )
    assert.equal(plain.connected.url, null)
    assert.deepEqual(plain.connected.dns.records, plain.domain.dns.records)
    assert.ok(
      plain.connected.dns.records.some((r: any) => r.type === 'CNAME' && r.name === 'www.bakery.test' && r.value === 'sites.plinth.test'),
    )
    assert.equal(plain.connected.apexForward.from, 'bakery.test')
    assert.match(plain.connected.next.message, /dns\.records exactly as answered.*Provider Inc \(https:\/\/panel\.provider\.test/)

    // With the operator's template and key: a synchronous apply link at the provider, signed over its query.
    const signed = await connect({
      PLINTH_DOMAIN_CONNECT_TEMPLATE: 'plinth.test/website',
      PLINTH_DOMAIN_CONNECT_KEY: join(dir, 'dc.pem'),
      PLINTH_DOMAIN_CONNECT_KEY_HOST: '_dck1',
    })
    const url = new URL(signed.connected.url)
    assert.equal(`${url.origin}${url.pathname}`, `https://${provider}/sync/v2/domainTemplates/providers/plinth.test/services/website/apply`)
    assert.deepEqual(
      [url.searchParams.get('domain'), url.searchParams.get('host'), url.searchParams.get('target'), url.searchParams.get('key')],
      ['bakery.test', 'www', 'sites.plinth.test', '_dck1'],
    )
    const query = url.search.slice(1)
    const unsigned = query.slice(0, query.indexOf('&key='))
    assert.ok(
      createVerify('RSA-SHA256').update(unsigned).verify(publicKey, url.searchParams.get('sig')!, 'base64'),
      'the signature verifies',
    )
    assert.match(signed.connected.next.message, /Give the person this link first: they sign in at Provider Inc and approve/)
  },
)
