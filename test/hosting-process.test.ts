import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tempDir } from './helpers/server.js'
import { runCli, spawnPlinth } from './helpers/process.js'
import { rawRequest } from './helpers/http.js'

const KEY = 'wb_' + 'h'.repeat(40)

async function api(port: number, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

const site = rawRequest

test('after a SIGKILL and restart every site serves exactly the same bytes, with no warm-up request', async (t) => {
  const dir = tempDir(t)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY })
  const w = (await api(p.port, 'POST', '/v1/websites', { name: 'Durable', kind: 'static', subdomain: 'durable' })).body
  const big = '<p>' + 'persist '.repeat(500) + '</p>'
  await api(p.port, 'POST', `/v1/websites/${w.id}/deploy/json`, {
    files: [
      { path: 'index.html', content: big },
      { path: 'logo.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' },
    ],
  })
  assert.equal((await api(p.port, 'POST', `/v1/websites/${w.id}/publish`)).status, 200)
  await api(p.port, 'POST', `/v1/websites/${w.id}/deploy/json`, { files: [{ path: 'index.html', content: 'draft only' }] })
  const requests: [string, string, Record<string, string>][] = [
    ['durable.localhost', '/', {}],
    ['durable.localhost', '/', { 'accept-encoding': 'br' }],
    ['durable.localhost', '/', { 'accept-encoding': 'gzip' }],
    ['durable.localhost', '/logo.bin', {}],
    ['draft--durable.localhost', '/', {}],
  ]
  const before = await Promise.all(requests.map(([h, path, headers]) => site(p.port, h, path, headers)))
  p.child.kill('SIGKILL')
  await p.exited
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const after = await Promise.all(requests.map(([h, path, headers]) => site(again.port, h, path, headers)))
  for (const [i, res] of after.entries()) {
    assert.equal(res.status, 200, requests[i].join(' '))
    assert.deepEqual(res.body, before[i].body, requests[i].join(' '))
    assert.equal(res.headers.etag, before[i].headers.etag)
    assert.equal(res.headers['content-encoding'], before[i].headers['content-encoding'])
  }
  assert.equal(after[1].headers['content-encoding'], 'br')
  assert.equal(after[4].body.toString(), 'draft only')
})

test('an operator suspends a site on the running server: nothing serves and publish is 403 suspended', async (t) => {
  const dir = tempDir(t)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY })
  const w = (await api(p.port, 'POST', '/v1/websites', { name: 'Bad', kind: 'static', subdomain: 'bad' })).body
  await api(p.port, 'POST', `/v1/websites/${w.id}/deploy/json`, { files: [{ path: 'index.html', content: 'SUSPENDED-SITE-BODY' }] })
  await api(p.port, 'POST', `/v1/websites/${w.id}/publish`)
  assert.equal((await site(p.port, 'bad.localhost', '/')).status, 200)
  const cli = await runCli(['suspend', w.id, '--reason', 'phishing'], { PLINTH_DATA_DIR: dir })
  assert.equal(cli.code, 0, cli.stderr)
  assert.match(cli.stdout, /suspended: phishing/)
  for (const host of ['bad.localhost', 'draft--bad.localhost']) {
    const res = await site(p.port, host, '/')
    assert.equal(res.status, 404)
    assert.doesNotMatch(res.body.toString(), /SUSPENDED-SITE-BODY/)
  }
  const publish = await api(p.port, 'POST', `/v1/websites/${w.id}/publish`)
  assert.equal(publish.status, 403)
  assert.equal(publish.body.details.reason, 'suspended')
  const got = (await api(p.port, 'GET', `/v1/websites/${w.id}`)).body
  assert.equal(got.suspendedReason, 'phishing')
  assert.ok(got.suspendedAt)
  assert.equal(got.urls.published, null)
  const audit = await api(p.port, 'GET', '/v1/audit-log?eventType=website.suspended')
  assert.equal(audit.body.items[0].actor.id, 'operator')
  // No API operation lifts it; the operator can.
  assert.equal((await runCli(['unsuspend', w.id], { PLINTH_DATA_DIR: dir })).code, 0)
  assert.equal((await site(p.port, 'bad.localhost', '/')).body.toString(), 'SUSPENDED-SITE-BODY')
})

test('the CLI works on a stopped server, refuses a bad call, and a second server on one data directory is refused', async (t) => {
  const dir = tempDir(t)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY })
  const w = (await api(p.port, 'POST', '/v1/websites', { name: 'Off', kind: 'static', subdomain: 'offline' })).body
  const second = await runCli(['start'], { PLINTH_DATA_DIR: dir, PORT: '0' })
  assert.equal(second.code, 1)
  assert.match(second.stderr, /another Plinth process/)
  p.child.kill('SIGTERM')
  await p.exited
  const noReason = await runCli(['suspend', w.id], { PLINTH_DATA_DIR: dir })
  assert.equal(noReason.code, 2)
  assert.match(noReason.stderr, /--reason/)
  const unknown = await runCli(['suspend', 'ws_nothere', '--reason', 'x'], { PLINTH_DATA_DIR: dir })
  assert.equal(unknown.code, 1)
  assert.match(unknown.stderr, /not found/)
  const offline = await runCli(['suspend', w.id, '--reason', 'spam'], { PLINTH_DATA_DIR: dir })
  assert.equal(offline.code, 0, offline.stderr)
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const got = (await api(again.port, 'GET', `/v1/websites/${w.id}`)).body
  assert.equal(got.suspendedReason, 'spam')
})

test('the package’s bin runs the CLI on the built tree: npx plinth, no rebuild', async (t) => {
  const root = fileURLToPath(new URL('../../', import.meta.url))
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  assert.equal(pkg.bin.plinth, 'dist/bin/plinth.js')
  assert.equal(
    readFileSync(join(root, pkg.bin.plinth), 'utf8').split('\n')[0],
    '#!/usr/bin/env -S node --no-node-snapshot',
    'the bin carries the Node flag isolated-vm needs',
  )
  assert.doesNotMatch(pkg.scripts.plinth, /build/, 'npm run plinth runs the built tree')
  const built = statSync(join(root, pkg.bin.plinth)).mtimeMs
  const dir = tempDir(t)
  const run = (args: string[], input = '') =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('npx', ['--no', '--', 'plinth', ...args], {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, PLINTH_DATA_DIR: dir },
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (c: Buffer) => (stdout += c))
      child.stderr.on('data', (c: Buffer) => (stderr += c))
      child.on('exit', (code) => resolve({ code, stdout, stderr }))
      child.stdin.end(input)
    })
  const help = await run(['--help'])
  assert.equal(help.code, 0, help.stderr)
  assert.match(help.stdout, /plinth user add --email/)
  const added = await run(['user', 'add', '--email', 'ops@example.com', '--name', 'Ops'], 'a-long-password-1\n')
  assert.equal(added.code, 0, added.stderr)
  assert.match(added.stdout, /ops@example\.com/)
  assert.equal(statSync(join(root, pkg.bin.plinth)).mtimeMs, built, 'nothing was rebuilt')
})
