import assert from 'node:assert/strict'
import { test } from 'node:test'
import { dnsServer } from '../helpers/dns.js'
import { rawPost, rawRequest } from '../helpers/http.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

async function publishedSite(server: TestServer, label: string, text: string): Promise<string> {
  const site = await createWebsite(server, { name: label, kind: 'static', subdomain: label })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: text }] } })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  return site.id
}

test('custom domains through a real DNS server: pending, failed, verified, active and serving, primary redirects, TLS ask, removal', async (t) => {
  const dns = await dnsServer(t)
  const server = await startServer(t, { PLINTH_DNS_SERVERS: dns.address, PLINTH_DOMAIN_TARGET: 'sites.plinth.test' })
  const shop = await publishedSite(server, 'shop', 'the shop')
  const other = await publishedSite(server, 'other', 'other site')

  const added = await server.api('POST', `/v1/websites/${shop}/domains`, { body: { hostname: 'Shop.Example.COM.' } })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  const domain = added.body
  assert.deepEqual([domain.hostname, domain.state, domain.url], ['shop.example.com', 'pending', null])
  assert.deepEqual(
    domain.dnsRecords.map((r: any) => [r.type, r.name]),
    [
      ['TXT', '_platform-challenge.shop.example.com'],
      ['CNAME', 'shop.example.com'],
    ],
  )
  assert.match(domain.next.message, /TXT _platform-challenge\.shop\.example\.com → platform-verify=/)
  assert.equal(domain.next.checkAgainSeconds, 60)
  // The shape the agent skill copies into a Type / Name / Value table (dns.records), and no forward for a subdomain.
  assert.deepEqual(domain.dns.records, domain.dnsRecords)
  assert.equal(domain.apexForward, null)
  // An unproven claim blocks nobody: another website may add the name too; proving it decides.
  const squatter = await server.api('POST', `/v1/websites/${other}/domains`, { body: { hostname: 'shop.example.com' } })
  assert.equal(squatter.status, 201)
  assert.equal(
    (await server.api('POST', `/v1/websites/${shop}/domains`, { body: { hostname: 'shop.example.com' } })).status,
    409,
    'not twice on one website',
  )
  for (const bad of ['192.0.2.1', '127.1', '0x7f.0.0.1', 'no-dot', 'x.localhost', 'bad_label.example.com'])
    assert.equal((await server.api('POST', `/v1/websites/${other}/domains`, { body: { hostname: bad } })).status, 400, bad)
  assert.equal(
    (await server.api('POST', `/v1/websites/${other}/domains`, { body: { hostname: 'bücher.example' } })).body.hostname,
    'xn--bcher-kva.example',
  )

  const verify = () => server.api('POST', `/v1/websites/${shop}/domains/${domain.id}/verify`)
  const noTxt = (await verify()).body
  assert.deepEqual([noTxt.state, noTxt.reason], ['pending', 'No TXT record at _platform-challenge.shop.example.com yet'])
  dns.zone['_platform-challenge.shop.example.com'] = { TXT: ['someone-else'] }
  const wrong = (await verify()).body
  assert.equal(wrong.state, 'failed')
  assert.match(wrong.next.message, /must hold platform-verify=/)
  dns.zone['_platform-challenge.shop.example.com'] = { TXT: [domain.dnsRecords[0].value] }
  const owned = (await verify()).body
  assert.deepEqual([owned.state, owned.reason], ['verified', 'shop.example.com does not point at the platform yet'])
  assert.equal((await rawRequest(server.plinth.port, 'shop.example.com', '/')).status, 404, 'not served before it is active')
  dns.zone['shop.example.com'] = { CNAME: 'sites.plinth.test' }
  const active = (await verify()).body
  assert.deepEqual([active.state, active.url], ['active', 'https://shop.example.com/'])
  assert.equal((await rawRequest(server.plinth.port, 'shop.example.com', '/')).body.toString(), 'the shop')
  // The other website's claim cannot take it now, even with its own token in the TXT record too.
  dns.zone['_platform-challenge.shop.example.com'] = { TXT: [domain.dnsRecords[0].value, squatter.body.dnsRecords[0].value] }
  const lost = (await server.api('POST', `/v1/websites/${other}/domains/${squatter.body.id}/verify`)).body
  assert.deepEqual(
    [lost.state, lost.reason],
    ['failed', 'Another website proved ownership of shop.example.com first; its owner must remove it there'],
  )
  assert.equal(
    (await server.api('POST', `/v1/websites/${other}/domains`, { body: { hostname: 'shop.example.com' } })).status,
    409,
    'a proven name belongs to one website',
  )
  assert.equal((await rawRequest(server.plinth.port, 'shop.example.com', '/')).body.toString(), 'the shop')

  // Caddy's on-demand TLS asks before getting a certificate.
  const ask = async (domainName: string) => (await fetch(`${server.origin}/_platform/tls/ask?domain=${domainName}`)).status
  assert.deepEqual(
    [await ask('shop.example.com'), await ask('shop.localhost'), await ask('unknown.example.org'), await ask('xn--bcher-kva.example')],
    [200, 200, 404, 404],
  )

  // A second domain, then a primary: the other addresses redirect there.
  const www = (await server.api('POST', `/v1/websites/${shop}/domains`, { body: { hostname: 'www.shop.example.com' } })).body
  // A www. domain says how to forward the bare name to it (the skill hands the person this rule).
  assert.deepEqual([www.apexForward.from, www.apexForward.to], ['shop.example.com', 'https://www.shop.example.com/'])
  assert.match(www.apexForward.message, /forward shop\.example\.com to https:\/\/www\.shop\.example\.com\//)
  dns.zone['_platform-challenge.www.shop.example.com'] = { TXT: [www.dnsRecords[0].value] }
  dns.zone['www.shop.example.com'] = { CNAME: 'sites.plinth.test.' }
  assert.equal((await server.api('POST', `/v1/websites/${shop}/domains/${www.id}/verify`)).body.state, 'active')
  assert.equal((await rawRequest(server.plinth.port, 'www.shop.example.com', '/')).body.toString(), 'the shop')
  const primary = await server.api('POST', `/v1/websites/${shop}/domains/${domain.id}/primary`, { body: { redirectPlatform: true } })
  assert.equal(primary.body.primary, true)
  const moved = await rawRequest(server.plinth.port, 'www.shop.example.com', '/a/page?x=1')
  assert.deepEqual([moved.status, moved.headers.location], [301, 'http://shop.example.com/a/page?x=1'])
  // A version's own address stays on the platform domain under a primary domain (never moved there),
  // and Caddy may get a certificate for it; not for a version the website lacks.
  const versions = (await server.api('GET', `/v1/websites/${shop}/source/versions`)).body.items
  const preview = new URL(versions.find((v: any) => v.urls.preview !== null).urls.preview)
  assert.match(preview.hostname, /^v\d+--shop\.localhost$/)
  const own = await rawRequest(server.plinth.port, preview.hostname, '/')
  assert.deepEqual([own.status, own.body.toString()], [200, 'the shop'])
  assert.deepEqual([await ask(preview.hostname), await ask('v99--shop.localhost'), await ask('v2--nobody.localhost')], [200, 404, 404])
  const form = await rawPost(server.plinth.port, 'www.shop.example.com', '/_platform/forms/contact', 'name=x', {
    'content-type': 'application/x-www-form-urlencoded',
  })
  assert.deepEqual(
    [form.status, form.headers.location],
    [308, 'http://shop.example.com/_platform/forms/contact'],
    'a form sent to an old address keeps its method',
  )
  assert.equal(
    (await rawRequest(server.plinth.port, 'shop.localhost', '/')).headers.location,
    'http://shop.example.com/',
    'the platform host too, as asked',
  )
  assert.equal((await rawRequest(server.plinth.port, 'draft--shop.localhost', '/')).status, 200, 'the draft host stays')
  assert.equal((await rawRequest(server.plinth.port, 'shop.example.com', '/')).body.toString(), 'the shop')
  assert.equal((await server.api('GET', '/v1/domains')).body.items.length, 4)

  // Removed: not served on the next request, not a TLS name any more.
  assert.equal((await server.api('DELETE', `/v1/websites/${shop}/domains/${domain.id}`)).status, 200)
  assert.equal((await rawRequest(server.plinth.port, 'shop.example.com', '/')).status, 404)
  assert.equal(await ask('shop.example.com'), 404)
  assert.equal(
    (await rawRequest(server.plinth.port, 'shop.localhost', '/')).body.toString(),
    'the shop',
    'with the primary gone, nothing redirects',
  )
  const audit = await server.api('GET', '/v1/audit-log?resourceType=domain')
  assert.deepEqual(audit.body.items.map((e: any) => e.eventType).reverse(), [
    'domain.added',
    'domain.added',
    'domain.added',
    'domain.activated',
    'domain.added',
    'domain.activated',
    'domain.primary_set',
    'domain.removed',
  ])
})
