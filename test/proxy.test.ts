import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { untilUp } from './helpers/process.js'
import { createWebsite, startServer, tempDir } from './helpers/server.js'

const NGINX = '/usr/sbin/nginx'
// CI installs Debian's nginx (.ci/run); elsewhere the test says how to get it.
const skip = !existsSync(NGINX) && process.env.CI !== 'true' ? 'needs Debian nginx: apt-get install nginx' : false

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Raw bytes to a port: the whole answer, once the server closes or `waitMs` passes. */
function raw(port: number, bytes: string, waitMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    const timer = setTimeout(() => socket.destroy(), waitMs)
    socket.on('data', (c) => (answer += c.toString('latin1')))
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(answer)
    })
    socket.on('error', () => undefined)
    socket.write(bytes)
  })
}

const statusOf = (answer: string) => answer.split('\r\n')[0]

test(
  'behind deploy/nginx.conf, what uWebSockets.js leaves unanswered is answered: HTTP/1.0, no Host, garbage, 414, oversized headers, 413',
  { skip },
  async (t) => {
    const s = await startServer(t)
    const w = await createWebsite(s, { name: 'Proxied', kind: 'static', subdomain: 'proxied' })
    await s.api('POST', `/v1/websites/${w.id}/deploy/json`, {
      body: { files: [{ path: 'index.html', content: '<h1>through nginx</h1>' }] },
    })
    assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
    const port = await freePort()
    const dir = tempDir(t, 'plinth-nginx-')
    const site = readFileSync(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8')
      .replace('127.0.0.1:8080', `127.0.0.1:${s.plinth.port}`)
      .replace('listen 80;', `listen 127.0.0.1:${port};`)
      .replace('api.example.com *.example.com', 'localhost *.localhost')
    const conf = join(dir, 'nginx.conf')
    writeFileSync(
      conf,
      `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n${site}\n}\n`,
    )
    const nginx = spawn(NGINX, ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    nginx.stderr!.on('data', (c) => (stderr += c))
    t.after(() => {
      nginx.kill('SIGKILL')
    })
    await untilUp(
      nginx,
      async () =>
        (await raw(port, 'GET / HTTP/1.1\r\nHost: proxied.localhost\r\nConnection: close\r\n\r\n', 500)).startsWith('HTTP/1.1 200'),
      'nginx in front of Plinth',
      () => stderr,
    )

    const http10 = await raw(port, 'GET / HTTP/1.0\r\nHost: proxied.localhost\r\n\r\n')
    assert.equal(statusOf(http10), 'HTTP/1.1 200 OK')
    assert.match(http10, /<h1>through nginx<\/h1>$/)
    // HTTP/1.0 without a Host reaches the API (nginx's first server name), which asks for a key.
    assert.equal(statusOf(await raw(port, 'GET /v1/me HTTP/1.0\r\n\r\n')), 'HTTP/1.1 401 Unauthorized')
    assert.equal(statusOf(await raw(port, 'GET / HTTP/1.1\r\n\r\n')), 'HTTP/1.1 400 Bad Request')
    assert.equal(statusOf(await raw(port, 'HELLO THERE\r\n\r\n')), 'HTTP/1.1 400 Bad Request')
    assert.equal(
      statusOf(await raw(port, `GET /${'a'.repeat(130 * 1024)} HTTP/1.1\r\nHost: proxied.localhost\r\n\r\n`)),
      'HTTP/1.1 414 Request-URI Too Large',
    )
    assert.equal(
      statusOf(await raw(port, `GET / HTTP/1.1\r\nHost: proxied.localhost\r\nX-Big: ${'b'.repeat(70 * 1024)}\r\n\r\n`)),
      'HTTP/1.1 400 Bad Request',
    )
    // Over nginx's limit (the largest deploy) nginx answers 413; under it, Plinth's per-operation limit.
    const huge = await fetch(`http://127.0.0.1:${port}/v1/websites`, {
      method: 'POST',
      headers: { host: 'localhost', authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body: Buffer.alloc(65 << 20, 32),
    })
    assert.equal(huge.status, 413)
    const over = await fetch(`http://127.0.0.1:${port}/v1/websites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body: Buffer.alloc(2 << 20, 32),
    })
    assert.equal(over.status, 413)
    assert.equal(((await over.json()) as any).details.limitBytes, 1 << 20)
    // The API and the sites answer through it as they do directly.
    const me = await fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: `Bearer ${s.adminKey}` } })
    assert.equal(me.status, 200)
  },
)

test('directly, requests uWebSockets.js cannot parse cost nothing: the server answers the next request at once', async (t) => {
  const s = await startServer(t)
  const port = s.plinth.port
  const bad = [
    'GET / HTTP/1.0\r\nHost: localhost\r\n\r\n',
    'GET / HTTP/1.1\r\n\r\n',
    'HELLO THERE\r\n\r\n',
    `GET /${'a'.repeat(130 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    `GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(300 * 1024)}\r\n\r\n`,
  ]
  // Sent at once, left open; none of them stops the next request from being answered.
  const pending = bad.map((bytes) => raw(port, bytes, 1000))
  const me = await s.api('GET', '/v1/me')
  assert.equal(me.status, 200)
  for (const answer of await Promise.all(pending))
    assert.ok(answer === '' || answer.startsWith('HTTP/1.1'), JSON.stringify(answer.slice(0, 80)))
})
