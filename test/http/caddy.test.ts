import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { needsCaddy, startCaddy } from '../helpers/caddy.js'
import { dnsServer } from '../helpers/dns.js'
import { freePort } from '../helpers/http.js'
import { createWebsite, startServer } from '../helpers/server.js'

const skip = needsCaddy

/** The Caddyfile the README documents, with test ports, a temporary storage and Caddy's internal CA. */
export function caddyfile(options: { plinth: string; httpPort: number; httpsPort: number; storage: string }): string {
  return `{
\tadmin off
\tstorage file_system ${options.storage}
\thttp_port ${options.httpPort}
\thttps_port ${options.httpsPort}
\tlocal_certs
\tskip_install_trust
\ton_demand_tls {
\t\task http://${options.plinth}/_platform/tls/ask
\t}
}

https:// {
\ttls {
\t\ton_demand
\t}
\treverse_proxy ${options.plinth}
}
`
}

test(
  'HTTPS through Caddy with on-demand TLS: a certificate for an active custom domain (Plinth’s ask says yes), none for an unknown name',
  { skip },
  async (t) => {
    const dns = await dnsServer(t)
    const server = await startServer(t, { PLINTH_DNS_SERVERS: dns.address })
    const site = await createWebsite(server, { name: 'tls', kind: 'static', subdomain: 'tls-site' })
    await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
      body: { files: [{ path: 'index.html', content: 'served over https' }] },
    })
    await server.api('POST', `/v1/websites/${site.id}/publish`)
    // No routing target configured: the TXT ownership record alone makes the domain active.
    const domain = (await server.api('POST', `/v1/websites/${site.id}/domains`, { body: { hostname: 'secure.example.com' } })).body
    dns.zone['_platform-challenge.secure.example.com'] = { TXT: [domain.dnsRecords[0].value] }
    assert.equal((await server.api('POST', `/v1/websites/${site.id}/domains/${domain.id}/verify`)).body.state, 'active')

    const [httpPort, httpsPort] = [await freePort(), await freePort()]
    const caddy = await startCaddy(t, (storage) => caddyfile({ plinth: `127.0.0.1:${server.plinth.port}`, httpPort, httpsPort, storage }))
    const curl = (name: string) =>
      promisify(execFile)('curl', [
        '-sS',
        '--max-time',
        '10',
        '--resolve',
        `${name}:${httpsPort}:127.0.0.1`,
        '--cacert',
        caddy.rootCertificate,
        `https://${name}:${httpsPort}/`,
      ]).then(
        (r) => ({ ok: true, out: r.stdout }),
        (error: { stderr?: string }) => ({ ok: false, out: error.stderr ?? '' }),
      )
    let served = await curl('secure.example.com')
    for (let i = 0; i < 20 && !served.ok; i++) {
      await new Promise((r) => setTimeout(r, 250))
      served = await curl('secure.example.com')
    }
    assert.equal(served.out, 'served over https', `${served.out}\n${caddy.log().slice(-2000)}`)
    assert.match(readFileSync(caddy.rootCertificate, 'utf8'), /BEGIN CERTIFICATE/)
    const refused = await curl('unknown.example.org')
    assert.equal(refused.ok, false, 'no certificate for a name Plinth does not serve')
  },
)
