import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { tempDir } from './helpers/server.js'
import { runFailingStart, spawnPlinth } from './helpers/process.js'
import { waitUntil } from './helpers/wait.js'

const KEY = 'wb_' + 'P'.repeat(43)

async function call(port: number, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

test('the first start of an empty data directory prints an admin key once; later starts print no secret', async (t) => {
  const dir = tempDir(t)
  const first = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const secret = /Admin API key \(shown once, store it now\): (wb_[A-Za-z0-9_-]+)/.exec(first.stdout())?.[1]
  assert.ok(secret, first.stdout())
  const me = await call(first.port, 'GET', '/v1/me', secret)
  assert.equal(me.status, 200)
  assert.deepEqual(me.body.access, { kind: 'organization', role: 'admin' })
  first.child.kill('SIGTERM')
  assert.deepEqual(await first.exited, { code: 0, signal: null })
  assert.ok(!first.stderr().includes(secret))
  const second = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  assert.ok(!/wb_/.test(second.stdout()), second.stdout())
  assert.equal((await call(second.port, 'GET', '/v1/me', secret)).status, 200)
})

test('PLINTH_ADMIN_KEY becomes the first admin key and is never printed', async (t) => {
  const dir = tempDir(t)
  const key = 'wb_' + 'k'.repeat(40)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: key })
  assert.ok(!p.stdout().includes(key))
  assert.equal((await call(p.port, 'GET', '/v1/me', key)).status, 200)
})

test('a SIGKILL right after a 2xx loses nothing', async (t) => {
  const dir = tempDir(t)
  const key = 'wb_' + 'd'.repeat(40)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: key })
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await call(p.port, 'POST', '/v1/websites', key, { name: `durable ${i}` })).body.id)
  const renamed = await call(p.port, 'PATCH', `/v1/websites/${ids[0]}/subdomain`, key, { label: 'after-rename' })
  assert.equal(renamed.status, 200)
  const created = await call(p.port, 'POST', '/v1/api-keys', key, { access: { kind: 'organization', role: 'full_editor' } })
  assert.equal(created.status, 201)
  p.child.kill('SIGKILL')
  await p.exited
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const list = await call(again.port, 'GET', '/v1/websites', key)
  assert.deepEqual(
    list.body.items.map((w: any) => w.id),
    [...ids].reverse(),
  )
  assert.equal((await call(again.port, 'GET', `/v1/websites/${ids[0]}`, key)).body.subdomain, 'after-rename')
  assert.equal((await call(again.port, 'GET', '/v1/me', created.body.secret)).status, 200)
})

test('SIGTERM lets a request in flight finish, then exits cleanly', async (t) => {
  const dir = tempDir(t)
  const key = 'wb_' + 'g'.repeat(40)
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: key })
  const body = JSON.stringify({ name: 'in flight' })
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: p.port,
        method: 'POST',
        path: '/v1/websites',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = ''
        res.on('data', (c) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode!, text }))
      },
    )
    req.on('error', reject)
    req.write(body.slice(0, 5))
    setTimeout(() => {
      p.child.kill('SIGTERM')
      setTimeout(() => req.end(body.slice(5)), 200)
    }, 200)
  })
  const { status, text } = await response
  assert.equal(status, 201, text)
  assert.deepEqual(await p.exited, { code: 0, signal: null })
  // The log says when the stop began and that it finished.
  assert.match(
    p.stderr(),
    /SIGTERM: draining requests and closing the database[\s\S]*stopped: every request answered and the database closed/,
  )
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const list = await call(again.port, 'GET', '/v1/websites', key)
  assert.equal(list.body.items[0].name, 'in flight')
})

test('a bad configuration value stops start-up with a message naming the variable', async (t) => {
  const dir = tempDir(t)
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ HOST: 'not a host!' }, 'HOST'],
    [{ PLINTH_SITE_DOMAIN: 'Bad_Domain' }, 'PLINTH_SITE_DOMAIN'],
    [{ PLINTH_API_ORIGIN: 'ftp://x' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'https://api.example.com/v1' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_ADMIN_KEY: 'secret123' }, 'PLINTH_ADMIN_KEY'],
    [{ PLINTH_CACHE_BYTES: 'lots' }, 'PLINTH_CACHE_BYTES'],
    [{ PLINTH_CACHE_BYTES: '10KiB' }, 'PLINTH_CACHE_BYTES'],
  ]
  for (const [env, variable] of cases) {
    const { code, stderr } = await runFailingStart({ PLINTH_DATA_DIR: dir, ...env })
    assert.equal(code, 2, JSON.stringify(env))
    assert.match(stderr, new RegExp(`configuration error: ${variable}:`), stderr)
  }
  // A bad admin key is never echoed back.
  const { stderr } = await runFailingStart({ PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: 'secret123' })
  assert.ok(!stderr.includes('secret123'))
})

test('an uncaught exception with writes in flight ends the process within seconds, and a restart keeps every acknowledged write', async (t) => {
  const dir = tempDir(t)
  const key = 'wb_' + 'u'.repeat(40)
  const fixture = new URL('./fixtures/throw-on-sigusr2.js', import.meta.url).href
  const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: key }, ['--import', fixture])
  const site = (await call(p.port, 'POST', '/v1/websites', key, { name: 'busy', kind: 'static' })).body.id as string
  // Writers keep LMDB's write thread busy (waiting on the main thread) when the exception hits.
  const acknowledged = new Map<number, string>()
  let stop = false
  const writer = async (n: number) => {
    for (let i = 0; !stop; i++) {
      const description = `writer ${n} write ${i}`
      try {
        const res = await call(p.port, 'PATCH', `/v1/websites/${site}`, key, { description })
        if (res.status === 200) acknowledged.set(n, description)
      } catch {
        return // the server went away
      }
    }
  }
  const writers = Array.from({ length: 8 }, (_, n) => writer(n))
  // Every writer has had a write acknowledged: all eight are in flight when the exception hits.
  await waitUntil(() => acknowledged.size === 8, 'every writer to have a write acknowledged')
  const signalled = Date.now()
  p.child.kill('SIGUSR2')
  const exit = await Promise.race([p.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))])
  stop = true
  await Promise.all(writers)
  assert.notEqual(exit, 'still running', 'the process did not end within 10 s of the uncaught exception')
  assert.equal((exit as { code: number | null }).code, 1)
  assert.ok(Date.now() - signalled < 5000, `exit took ${Date.now() - signalled} ms`)
  assert.match(p.stderr(), /uncaught exception: Plinth stops now.*injected by the test fixture/s)
  assert.ok(acknowledged.size > 0)
  // The pid file of the dead process does not block a restart, and the last acknowledged write of
  // some writer is the stored description (each PATCH replaces it; one of them was the last).
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir })
  const stored = (await call(again.port, 'GET', `/v1/websites/${site}`, key)).body.description as string
  assert.match(stored, /^writer \d+ write \d+$/)
  const [n, i] = stored.match(/\d+/g)!.map(Number)
  const last = Number(acknowledged.get(n)?.match(/\d+$/)?.[0] ?? -1)
  assert.ok(i >= last, `stored "${stored}" is older than the acknowledged "${acknowledged.get(n)}"`)
})

test('after renders, SIGTERM exits cleanly and leaves no render process behind, twice over', async (t) => {
  const dir = tempDir(t)
  const key = 'wb_' + 'r'.repeat(40)
  for (let round = 0; round < 2; round++) {
    const p = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: key })
    const site = (await call(p.port, 'POST', '/v1/websites', key, { name: `render ${round}` })).body.id as string
    const lease = (await call(p.port, 'POST', `/v1/websites/${site}/source/lease`, key)).body.leaseToken
    const page = "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>hi</p> })\n"
    assert.equal(
      (
        await call(p.port, 'PUT', `/v1/websites/${site}/source/file`, key, {
          leaseToken: lease,
          file: { type: 'page', name: 'home' },
          content: page,
        })
      ).status,
      201,
    )
    assert.equal((await call(p.port, 'POST', `/v1/websites/${site}/head/check`, key)).body.ok, true)
    const renderers = execFileSync('pgrep', ['-P', String(p.child.pid), '-f', 'render.worker.js'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number)
    assert.ok(renderers.length >= 1)
    p.child.kill('SIGTERM')
    assert.deepEqual(await p.exited, { code: 0, signal: null })
    assert.doesNotMatch(p.stderr(), /Assertion|abort/i)
    for (const pid of renderers) assert.throws(() => process.kill(pid, 0), /ESRCH/, `render process ${pid} outlived the server`)
  }
})

test('a second server on a port already in use exits non-zero naming the port; the first goes on answering alone', async (t) => {
  // uWS listens with SO_REUSEPORT: without a check, the kernel would split the port's connections between
  // two processes, and one key and host would get a mix of 200, 401 and 404.
  const first = await spawnPlinth(t, { PLINTH_DATA_DIR: tempDir(t), PLINTH_ADMIN_KEY: KEY })
  const secondDir = tempDir(t)
  const second = await runFailingStart({ PLINTH_DATA_DIR: secondDir, PORT: String(first.port), HOST: '127.0.0.1' })
  assert.equal(second.code, 1, second.stderr)
  assert.match(second.stderr, new RegExp(`port ${first.port} on 127\\.0\\.0\\.1 is in use by another process.*set PORT to a free port`))
  assert.deepEqual(readdirSync(secondDir), [], 'nothing was created: no admin key was made that nobody saw')
  // Every request reaches the first server: its key works on each of them.
  for (let i = 0; i < 30; i++) {
    const res = await fetch(`http://127.0.0.1:${first.port}/v1/me`, { headers: { authorization: `Bearer ${KEY}` } })
    assert.equal(res.status, 200, `request ${i}`)
  }
  // A port held by any other server (not uWS) is refused the same way.
  const other = createServer().listen(0, '127.0.0.1')
  await once(other, 'listening')
  t.after(() => other.close())
  const taken = await runFailingStart({
    PLINTH_DATA_DIR: tempDir(t),
    PORT: String((other.address() as AddressInfo).port),
    HOST: '127.0.0.1',
  })
  assert.equal(taken.code, 1)
  assert.match(taken.stderr, /is in use by another process/)
})

test('start-up refuses a plain-http API or dashboard that shares a parent domain with the sites or lies under their domain at all, and says what to use instead', async (t) => {
  // A site at x.plinth.test can set `plinth_session=…; Domain=plinth.test`, which api.plinth.test then
  // receives: over plain http the dashboard could not tell it from its own (the `__Host-` prefix needs https).
  const dir = tempDir(t)
  for (const [env, variable] of [
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.test:8080', PLINTH_SITE_DOMAIN: 'plinth.test' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'http://plinth.test', PLINTH_SITE_DOMAIN: 'plinth.test' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.localhost:8080', PLINTH_SITE_DOMAIN: 'sites.plinth.localhost' }, 'PLINTH_API_ORIGIN'],
    // Under a public suffix (or a name the list does not know) every `x.test` is a registrable domain of its
    // own, yet the site named `plinth` is `plinth.test`, a parent of the API's host.
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.test:8080', PLINTH_SITE_DOMAIN: 'test' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.localhost:8080', PLINTH_SITE_DOMAIN: 'localhost' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.github.io', PLINTH_SITE_DOMAIN: 'github.io' }, 'PLINTH_API_ORIGIN'],
    [{ PLINTH_API_ORIGIN: 'http://api.plinth.co.uk', PLINTH_SITE_DOMAIN: 'co.uk' }, 'PLINTH_API_ORIGIN'],
    [
      { PLINTH_API_ORIGIN: 'https://api.plinth.co.uk', PLINTH_APP_URL: 'http://app.co.uk/app', PLINTH_SITE_DOMAIN: 'co.uk' },
      'PLINTH_APP_URL',
    ],
    [
      { PLINTH_API_ORIGIN: 'https://api.example.test', PLINTH_APP_URL: 'http://app.example.test/app', PLINTH_SITE_DOMAIN: 'example.test' },
      'PLINTH_APP_URL',
    ],
  ] as const) {
    const { code, stderr } = await runFailingStart({ PLINTH_DATA_DIR: dir, ...env })
    assert.equal(code, 2, `${JSON.stringify(env)}: ${stderr}`)
    assert.match(stderr, new RegExp(`configuration error: ${variable}: is plain http on `), stderr)
    assert.match(
      stderr,
      /(shares a parent domain with|lies under) the sites.*over https.*__Host-.*a domain of their own \(PLINTH_SITE_DOMAIN/,
    )
  }
  // What stays allowed: the embedded default (API at localhost, sites at *.localhost, which cannot set
  // Domain=localhost), sites on a domain of their own, and https (the session cookie is then __Host-).
  for (const env of [
    {},
    { PLINTH_API_ORIGIN: 'http://api.plinth.test', PLINTH_SITE_DOMAIN: 'plinth-sites.test' },
    { PLINTH_API_ORIGIN: 'http://localhost:8080', PLINTH_SITE_DOMAIN: 'plinth.localhost' },
  ] as Record<string, string>[]) {
    const started = await spawnPlinth(t, { PLINTH_DATA_DIR: tempDir(t), ...env })
    assert.doesNotMatch(started.stderr(), /shares a parent domain/, JSON.stringify(env))
    started.child.kill('SIGTERM')
    await started.exited
  }
})

test('start-up warns when the sites share a parent domain with an https API, and says what to do', async (t) => {
  const shared = await spawnPlinth(t, {
    PLINTH_DATA_DIR: tempDir(t),
    PLINTH_API_ORIGIN: 'https://api.example.test',
    PLINTH_SITE_DOMAIN: 'example.test',
  })
  assert.match(
    shared.stderr(),
    /warn the API host api\.example\.test shares a parent domain with the sites \(\*\.example\.test\).*separate registrable domain/,
  )
  shared.child.kill('SIGTERM')
  await shared.exited
  const apart = await spawnPlinth(t, {
    PLINTH_DATA_DIR: tempDir(t),
    PLINTH_API_ORIGIN: 'https://api.example.test',
    PLINTH_SITE_DOMAIN: 'example-sites.test',
  })
  assert.doesNotMatch(apart.stderr(), /shares a parent domain/)
})

test('the data directory is its owner’s alone: 0700, and every file in it 0600, also for one an older version made open', async (t) => {
  // The directory holds password and token hashes and the key webhook secrets and share links derive from.
  const parent = tempDir(t)
  const dir = join(parent, 'data')
  const first = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY })
  const mode = (path: string) => (statSync(join(dir, path)).mode & 0o777).toString(8)
  const check = () => {
    assert.equal(mode('.'), '700')
    assert.equal(mode('db'), '700')
    for (const file of ['db/data.mdb', 'db/lock.mdb', 'plinth.pid']) assert.equal(mode(file), '600', file)
    for (const entry of readdirSync(dir, { recursive: true }) as string[]) {
      const full = join(dir, entry)
      const bits = statSync(full).mode & 0o077
      assert.equal(bits, 0, `${entry} is readable by others (${(statSync(full).mode & 0o777).toString(8)})`)
    }
  }
  check()
  first.child.kill('SIGTERM')
  await first.exited
  // A directory from before: opened up as an older version left it.
  chmodSync(dir, 0o755)
  chmodSync(join(dir, 'db'), 0o755)
  chmodSync(join(dir, 'db', 'data.mdb'), 0o644)
  const again = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY })
  assert.equal((await call(again.port, 'GET', '/v1/me', KEY)).status, 200)
  check()
})
