import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { dnsServer } from '../helpers/dns.js'
import { freePort } from '../helpers/http.js'
import { createWebsite, startServer, tempDir } from '../helpers/server.js'

const CADDY = '/usr/bin/caddy'
// CI installs Debian's caddy (.ci/run); elsewhere the test says how to get it.
const skip = !existsSync(CADDY) && process.env.CI !== 'true' ? 'needs Debian caddy: apt-get install caddy' : false

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

    const dir = tempDir(t, 'plinth-caddy-')
    const [httpPort, httpsPort] = [await freePort(), await freePort()]
    writeFileSync(
      join(dir, 'Caddyfile'),
      caddyfile({ plinth: `127.0.0.1:${server.plinth.port}`, httpPort, httpsPort, storage: join(dir, 'data') }),
    )
    const caddy = spawn(CADDY, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    })
    let log = ''
    caddy.stderr.on('data', (chunk) => (log += chunk))
    t.after(() => new Promise<void>((r) => (caddy.exitCode !== null ? r() : (caddy.once('exit', () => r()), caddy.kill('SIGTERM')))))
    const curl = (name: string) =>
      promisify(execFile)('curl', [
        '-sS',
        '--max-time',
        '10',
        '--resolve',
        `${name}:${httpsPort}:127.0.0.1`,
        '--cacert',
        join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt'),
        `https://${name}:${httpsPort}/`,
      ]).then(
        (r) => ({ ok: true, out: r.stdout }),
        (error: { stderr?: string }) => ({ ok: false, out: error.stderr ?? '' }),
      )
    // Caddy makes its local CA on start; wait for the root certificate and the listener.
    for (let i = 0; i < 100 && !existsSync(join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt')); i++)
      await new Promise((r) => setTimeout(r, 100))
    assert.ok(existsSync(join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt')), `caddy did not start: ${log.slice(-2000)}`)
    let served = await curl('secure.example.com')
    for (let i = 0; i < 20 && !served.ok; i++) {
      await new Promise((r) => setTimeout(r, 250))
      served = await curl('secure.example.com')
    }
    assert.equal(served.out, 'served over https', `${served.out}\n${log.slice(-2000)}`)
    assert.match(readFileSync(join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt'), 'utf8'), /BEGIN CERTIFICATE/)
    const refused = await curl('unknown.example.org')
    assert.equal(refused.ok, false, 'no certificate for a name Plinth does not serve')
  },
)
