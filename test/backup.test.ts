import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, readdirSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { keyedCall, rawPost, rawRequest } from './helpers/http.js'
import { runCli, spawnPlinth, type RunningPlinth } from './helpers/process.js'
import { tempDir } from './helpers/server.js'
import { signManifest } from '../core/backup/manifest.js'
import { deriveKey, readSecretFile } from '../core/installation-secret.js'
import { signToken } from '../core/signed.js'
import { open } from 'lmdb'
import { shareFiles, ticketDeployLarge } from './helpers/ticket.js'
import { waitUntil } from './helpers/wait.js'

/*
 * Backups as an operator takes them: `plinth backup ROOT` against a running server (through its control
 * socket) or a stopped data directory, `plinth backup verify`, `plinth restore`, all as spawned
 * processes, and the restored data directory started and asked what the original answered.
 */

const KEY = 'wb_' + 'B'.repeat(43)

function call(port: number, method: string, path: string, body?: unknown, key = KEY) {
  return keyedCall(port, key, method, path, body)
}

/** A server with content of every kind: sites published and drafted, shared files, a large site file, a form submission, keys. */
async function populate(port: number) {
  const site = (await call(port, 'POST', '/v1/websites', { name: 'Kept', kind: 'static', subdomain: 'kept' })).body
  const deploy = (files: Record<string, string>) =>
    call(port, 'POST', `/v1/websites/${site.id}/deploy/json`, {
      files: Object.entries(files).map(([path, content]) => ({ path, content })),
    })
  assert.equal((await deploy({ 'index.html': '<h1>Live</h1>', 'css/site.css': 'h1{color:red}' })).status, 201)
  assert.equal((await call(port, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.equal((await deploy({ 'index.html': '<h1>Draft</h1>' })).status, 201)
  const storage = (await call(port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const shared = await shareFiles(port, KEY, storage.id, [
    { name: 'report.pdf', bytes: Buffer.from('%PDF-1.4 the report') },
    { name: 'clip.bin', bytes: Buffer.alloc(300_000, 7) },
  ])
  // A large site file (over 1 MiB) lives in the blob directory, sent through a ticket deploy.
  const big = Buffer.alloc((1 << 20) + 4096, 3)
  const large = (await call(port, 'POST', '/v1/websites', { name: 'Large', kind: 'static', subdomain: 'large' })).body
  await ticketDeployLarge(port, KEY, large.id, '<p>large</p>', big)
  assert.equal((await call(port, 'POST', `/v1/websites/${large.id}/publish`)).status, 200)
  const posted = await rawRequestPost(port, 'kept.localhost', '/_platform/forms/contact', 'email=ada%40example.com&message=kept')
  assert.equal(posted, 200)
  const editor = (await call(port, 'POST', '/v1/api-keys', { name: 'editor', access: { kind: 'organization', role: 'content_editor' } }))
    .body
  return { site, storage, large, shared, editor }
}

async function rawRequestPost(port: number, host: string, path: string, body: string): Promise<number> {
  const answer = await rawPost(port, host, path, body, { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' })
  return answer.status
}

/** What a visitor and an API client get from a server: sites byte for byte, shared files, lists. */
async function observe(port: number, ids: Awaited<ReturnType<typeof populate>>) {
  const page = async (host: string, path: string) => {
    const answer = await rawRequest(port, host, path)
    return `${answer.status} ${createHash('sha256').update(answer.body).digest('hex')}`
  }
  // The URLs an answer carries name the server's port, the one thing a second server answers differently.
  const list = async (path: string) => JSON.parse(JSON.stringify((await call(port, 'GET', path)).body).replaceAll(`:${port}`, ':PORT'))
  return {
    pages: [
      await page('kept.localhost', '/'),
      await page('kept.localhost', '/css/site.css'),
      await page('draft--kept.localhost', '/'),
      await page('large.localhost', '/media/big.bin'),
      ...(await Promise.all(ids.shared.map((f) => page('files.localhost', new URL(f.url).pathname)))),
    ],
    websites: (await list('/v1/websites')).items.map((w: any) => [w.id, w.name, w.headVersion, w.publishedVersion]),
    versions: (await list(`/v1/websites/${ids.site.id}/source/versions`)).items,
    objects: await list(`/v1/websites/${ids.storage.id}/objects`),
    submissions: (await list(`/v1/websites/${ids.site.id}/forms/contact/submissions`)).items.map((s: any) => [s.id, s.data]),
    editorKey: (await call(port, 'GET', '/v1/me', undefined, ids.editor.secret)).status,
  }
}

function backups(root: string): { id: string; complete: boolean }[] {
  return existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d{8}T\d{6}Z/.test(name))
        .sort()
        .map((id) => ({ id, complete: existsSync(join(root, id, 'manifest.json')) }))
    : []
}

async function stop(server: RunningPlinth): Promise<void> {
  server.child.kill('SIGTERM')
  await server.exited
}

test('a backup taken while writes go on, restored and started, answers what the original answered: every write acknowledged before it began, a consistent prefix of those during it', async (t: TestContext) => {
  const data = tempDir(t)
  const root = join(tempDir(t), 'backups')
  const original = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY })
  const ids = await populate(original.port)
  const churn = (await call(original.port, 'POST', '/v1/websites', { name: 'Churn', kind: 'static', subdomain: 'churn' })).body

  // Writes of three kinds, each waiting for the one before: what they acknowledged is numbered.
  let running = true
  const acked = { posts: 0, keys: 0, deploys: 0 }
  let ackedBefore = { posts: 0, keys: 0, deploys: 0 }
  const writer = (async () => {
    for (let i = 1; running; i++) {
      if ((await rawRequestPost(original.port, 'kept.localhost', '/_platform/forms/numbers', `n=${i}`)) === 200) acked.posts = i
      else break
      if (
        (
          await call(original.port, 'POST', '/v1/api-keys', {
            name: `churn-${i}`,
            access: { kind: 'organization', role: 'content_editor' },
          })
        ).status === 201
      )
        acked.keys = i
      else break
      const deployed = await call(original.port, 'POST', `/v1/websites/${churn.id}/deploy/json`, {
        files: [{ path: 'index.html', content: `deploy ${i}` }],
      })
      if (deployed.status === 201) acked.deploys = i
      else break
    }
  })()
  await waitUntil(() => acked.deploys >= 3, 'the first writes')
  ackedBefore = { ...acked }
  const taken = await runCli(['backup', root], { PLINTH_DATA_DIR: data })
  running = false
  await writer
  assert.equal(taken.code, 0, taken.stderr)
  assert.match(taken.stdout, /Backup \d{8}T\d{6}Z of .* \(running server\) is complete/)
  const before = await observe(original.port, ids)

  // The backup verifies, and its manifest names every blob file (two shared files, the large site file).
  const checked = await runCli(['backup', 'verify', root], { PLINTH_DATA_DIR: data })
  assert.equal(checked.code, 0, checked.stdout + checked.stderr)
  assert.match(checked.stdout, /^OK: every file matches its manifest/m)
  const [{ id }] = backups(root)
  const manifest = JSON.parse(readFileSync(join(root, id!, 'manifest.json'), 'utf8'))
  assert.equal(manifest.blobs.length, 3, JSON.stringify(manifest.blobs))

  const restoredDir = tempDir(t)
  const restored = await runCli(['restore', root, '--secret', join(data, 'installation.key')], { PLINTH_DATA_DIR: restoredDir })
  assert.equal(restored.code, 0, restored.stderr)
  const copy = await spawnPlinth(t, { PLINTH_DATA_DIR: restoredDir })
  const after = await observe(copy.port, ids)
  assert.deepEqual(
    { ...after, websites: after.websites.filter((w: any[]) => w[0] !== churn.id) },
    { ...before, websites: before.websites.filter((w: any[]) => w[0] !== churn.id) },
    'every site byte for byte, every list the same, the keys work',
  )
  assert.equal((await call(copy.port, 'GET', '/v1/me')).status, 200, 'the admin key works')

  // The writes during the backup: a prefix of what was acknowledged, never less than what came before it.
  const numbers = (await call(copy.port, 'GET', `/v1/websites/${ids.site.id}/forms/numbers/submissions?limit=100`)).body.items
    .map((s: any) => Number(s.data.n))
    .sort((a: number, b: number) => a - b)
  assert.ok(numbers.length >= ackedBefore.posts, `${numbers.length} submissions restored, ${ackedBefore.posts} acknowledged before`)
  assert.deepEqual(
    numbers,
    Array.from({ length: numbers.length }, (_, i) => i + 1),
    'a prefix: no gap',
  )
  const keys = (await call(copy.port, 'GET', '/v1/api-keys?limit=100')).body.items
    .map((k: any) => k.name)
    .filter((name: string) => name.startsWith('churn-'))
    .map((name: string) => Number(name.slice(6)))
    .sort((a: number, b: number) => a - b)
  assert.ok(keys.length >= ackedBefore.keys)
  assert.deepEqual(
    keys,
    Array.from({ length: keys.length }, (_, i) => i + 1),
  )
  const head = (await call(copy.port, 'GET', `/v1/websites/${churn.id}/source/summary`)).body.headVersion
  assert.ok(head - 1 >= ackedBefore.deploys, `head ${head}, ${ackedBefore.deploys} deploys acknowledged before`)
  // The head version restored is whole: its content is the deploy that made it.
  assert.equal((await rawRequest(copy.port, 'draft--churn.localhost', '/')).body.toString(), `deploy ${head - 1}`)
  await stop(copy)

  // /metrics of the original says when the last backup succeeded.
  const metrics = await (await fetch(`http://127.0.0.1:${original.port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
  const at = Number(/^plinth_backup_last_success_timestamp_seconds (\S+)$/m.exec(metrics)?.[1])
  assert.equal(at, Date.parse(manifest.finishedAt) / 1000)
  assert.ok(Number(/^plinth_backup_last_success_bytes (\S+)$/m.exec(metrics)?.[1]) >= manifest.database.size)
})

test('a second backup copies only blob files the root lacks; --keep prunes older backups and the blobs only they named; a stopped data directory backs up and restores too', async (t) => {
  const data = tempDir(t)
  const root = join(tempDir(t), 'backups')
  const server = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY })
  const ids = await populate(server.port)
  assert.equal((await runCli(['backup', root], { PLINTH_DATA_DIR: data })).code, 0)
  const added = await shareFiles(server.port, KEY, ids.storage.id, [{ name: 'new.bin', bytes: Buffer.alloc(200_000, 9) }])
  // A shared file deleted: its blob leaves the data directory, but the first backup keeps its copy.
  const gone = ids.shared[0]!.objectId
  assert.equal((await call(server.port, 'DELETE', `/v1/websites/${ids.storage.id}/objects/${gone}`)).status, 200)
  const second = await runCli(['backup', root, '--keep', '1'], { PLINTH_DATA_DIR: data })
  assert.equal(second.code, 0, second.stderr)
  const [first, latest] = [backups(root), backups(root).at(-1)!]
  assert.equal(first.length, 1, '--keep 1 left one backup')
  const manifest = JSON.parse(readFileSync(join(root, latest.id, 'manifest.json'), 'utf8'))
  assert.equal(manifest.totals.newBlobs, 1, 'only the new shared file was copied')
  assert.equal(manifest.totals.copiedBytes, manifest.database.size + 200_000)
  assert.match(second.stdout, /--keep 1: removed 1 older or incomplete backups .* and 1 blob files no kept backup names/)
  const stored = readdirSync(join(root, 'blobs')).flatMap((d) => readdirSync(join(root, 'blobs', d)).map((f) => d + f))
  assert.deepEqual(stored.sort(), manifest.blobs.map((b: any) => b.sha256).sort(), 'the root holds exactly the blobs its backup names')

  // Stopped: the command holds the data directory itself.
  await stop(server)
  const offline = await runCli(['backup', root], { PLINTH_DATA_DIR: data })
  assert.equal(offline.code, 0, offline.stderr)
  assert.match(offline.stdout, /\(stopped data directory\) is complete/)
  const restoredDir = tempDir(t)
  assert.equal(
    (await runCli(['restore', root], { PLINTH_DATA_DIR: restoredDir, PLINTH_SECRET_FILE: join(data, 'installation.key') })).code,
    0,
  )
  const copy = await spawnPlinth(t, { PLINTH_DATA_DIR: restoredDir })
  assert.equal((await rawRequest(copy.port, 'files.localhost', new URL(added[0]!.url).pathname)).body.length, 200_000)
  assert.equal((await rawRequest(copy.port, 'files.localhost', new URL(ids.shared[0]!.url).pathname)).status, 404, 'deleted before')
  assert.equal((await rawRequest(copy.port, 'kept.localhost', '/')).body.toString(), '<h1>Live</h1>')
})

test('a server or a backup killed part way leaves no backup that claims to be complete; the server keeps removing files after; damage is named by verify and restore', async (t) => {
  const data = tempDir(t)
  const root = join(tempDir(t), 'backups')
  // The server killed right after it copied its database, and while the command copied the blob files
  // (when it is asked whether it still keeps them, before the manifest).
  let ids: Awaited<ReturnType<typeof populate>> | undefined
  for (const point of ['backup:database-copied', 'backup:confirming']) {
    const doomed = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY, PLINTH_CRASH_AT: point })
    ids ??= await populate(doomed.port)
    const crashedRoot = join(tempDir(t), 'crashed')
    const failed = await runCli(['backup', crashedRoot], { PLINTH_DATA_DIR: data })
    assert.equal(failed.code, 1, `${point}: ${failed.stdout}`)
    assert.match(failed.stderr, /the server (closed|stopped)/, point)
    assert.equal((await doomed.exited).signal, 'SIGKILL', point)
    assert.deepEqual(backups(crashedRoot), [], `${point}: nothing that looks like a backup`)
  }

  // The backup command killed after its first blob, and right before its manifest.
  const server = await spawnPlinth(t, { PLINTH_DATA_DIR: data })
  for (const point of ['backup:blob-copied#1', 'backup:before-manifest']) {
    const killed = await runCli(['backup', root], { PLINTH_DATA_DIR: data, PLINTH_CRASH_AT: point })
    assert.equal(killed.code, null, `${point}: ${killed.stderr}`)
  }
  assert.deepEqual(
    backups(root).map((b) => b.complete),
    [false, false],
  )
  for (const args of [
    ['restore', root],
    ['backup', 'verify', root],
  ]) {
    const refused = await runCli(args, { PLINTH_DATA_DIR: tempDir(t) })
    assert.equal(refused.code, 2, refused.stderr)
    assert.match(refused.stderr, /holds no complete backup: 2 incomplete/)
  }
  // The server no longer keeps files for the dead backup: a deleted shared file's blob leaves the disk.
  const blobFiles = () =>
    readdirSync(join(data, 'files'))
      .filter((d) => /^[0-9a-f]{2}$/.test(d))
      .flatMap((d) => readdirSync(join(data, 'files', d)))
  const count = blobFiles().length
  assert.equal((await call(server.port, 'DELETE', `/v1/websites/${ids!.storage.id}/objects/${ids!.shared[1]!.objectId}`)).status, 200)
  await waitUntil(() => blobFiles().length === count - 1, 'the deleted file’s blob to leave the data directory')

  // A sound backup, then three damaged copies of it.
  const sound = await runCli(['backup', root, '--keep', '1'], { PLINTH_DATA_DIR: data })
  assert.equal(sound.code, 0, sound.stderr)
  assert.deepEqual(
    backups(root).map((b) => b.complete),
    [true],
    'the incomplete ones were pruned',
  )
  const [{ id }] = backups(root)
  const manifest = JSON.parse(readFileSync(join(root, id!, 'manifest.json'), 'utf8'))
  const damaged = (what: string, damage: (dir: string) => void) => {
    const copyRoot = join(tempDir(t), what)
    cpSync(root, copyRoot, { recursive: true })
    damage(join(copyRoot, id!))
    return copyRoot
  }
  const blob = manifest.blobs[0].sha256 as string
  const cases: [string, string, RegExp][] = [
    [
      'blob deleted',
      damaged('blob', (dir) => unlinkSync(join(dir, '..', 'blobs', blob.slice(0, 2), blob.slice(2)))),
      new RegExp(`blob ${blob} (of the backup )?is missing`),
    ],
    [
      'manifest edited',
      damaged('manifest', (dir) => {
        const edited = { ...manifest, database: { ...manifest.database, sha256: 'f'.repeat(64) } }
        writeFileSync(join(dir, 'manifest.json'), JSON.stringify(edited))
      }),
      /signature does not match the installation's secret/,
    ],
    [
      // A signed manifest with its signature taken off is not a backup from before signatures.
      'signature removed',
      damaged('unsigned', (dir) => {
        const { signature: _, ...rest } = manifest
        writeFileSync(join(dir, 'manifest.json'), JSON.stringify(rest))
      }),
      /signature does not match the installation's secret/,
    ],
    [
      // The attack on a manifest that is not signed: the database changed and the manifest's hash with it.
      'database and manifest changed together',
      damaged('both', (dir) => {
        const file = join(dir, 'db', 'data.mdb')
        const bytes = readFileSync(file)
        bytes[bytes.length - 1] ^= 0xff
        writeFileSync(file, bytes)
        const sha256 = createHash('sha256').update(bytes).digest('hex')
        writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, database: { ...manifest.database, sha256 } }))
      }),
      /signature does not match the installation's secret/,
    ],
    [
      // A manifest that leaves out a blob file the database names (signed as a writer with the secret would):
      // restored, the server would lose the file.
      'a blob the database names left out',
      damaged('unlisted', (dir) => {
        const blobs = manifest.blobs.filter((b: { sha256: string }) => b.sha256 !== blob)
        const { signature: _, ...rest } = manifest
        writeFileSync(
          join(dir, 'manifest.json'),
          JSON.stringify(signManifest({ ...rest, blobs }, readSecretFile(join(data, 'installation.key')))),
        )
      }),
      new RegExp(`(names 1 blob file the backup does not hold \\(${blob}\\)|blob ${blob}, named by the database, is not in the manifest)`),
    ],
    [
      'database truncated',
      damaged('truncated', (dir) => truncateSync(join(dir, 'db', 'data.mdb'), Math.floor(statSync(join(dir, 'db', 'data.mdb')).size / 2))),
      /db\/data\.mdb (is \d+ bytes, the manifest says|does not match the manifest)/,
    ],
  ]
  for (const [what, path, named] of cases) {
    const verified = await runCli(['backup', 'verify', path], { PLINTH_DATA_DIR: data })
    assert.equal(verified.code, 1, `${what}: ${verified.stdout}`)
    assert.match(verified.stderr, named, what)
    const target = tempDir(t)
    const refused = await runCli(['restore', path, '--secret', join(data, 'installation.key')], { PLINTH_DATA_DIR: target })
    assert.equal(refused.code, 2, `${what}: ${refused.stderr}`)
    assert.match(refused.stderr, named, what)
    assert.deepEqual(readdirSync(target), [], `${what}: nothing restored`)
  }
  await stop(server)
})

test('restore refuses a non-empty data directory, a backup of a newer format and a path that is not a backup: exit 2, nothing changed', async (t) => {
  const data = tempDir(t)
  const root = join(tempDir(t), 'backups')
  const server = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY })
  await populate(server.port)
  assert.equal((await runCli(['backup', root], { PLINTH_DATA_DIR: data })).code, 0)
  await stop(server)
  const [{ id }] = backups(root)

  // Into a non-empty directory (the original itself): refused, naming what is there; nothing changed.
  const listing = () => readdirSync(data).map((name) => [name, statSync(join(data, name)).mtimeMs])
  const before = listing()
  const busy = await runCli(['restore', root], { PLINTH_DATA_DIR: data })
  assert.equal(busy.code, 2)
  assert.match(busy.stderr, /is not empty: it holds db\/ \(a database, [\d.]+ MiB\), files\/ \(3 blob files\).*--force/)
  assert.deepEqual(listing(), before)
  // With --force it is replaced.
  const forced = await runCli(['restore', root, '--force'], { PLINTH_DATA_DIR: data })
  assert.equal(forced.code, 0, forced.stderr)

  // An older backup copied under a newer name (where the newest is looked for): refused by its signed name.
  const rolledBack = join(tempDir(t), 'rolled-back')
  cpSync(root, rolledBack, { recursive: true })
  cpSync(join(rolledBack, id!), join(rolledBack, '29991231T000000Z'), { recursive: true })
  const renamed = await runCli(['restore', rolledBack, '--secret', join(data, 'installation.key')], { PLINTH_DATA_DIR: tempDir(t) })
  assert.equal(renamed.code, 2)
  assert.match(renamed.stderr, new RegExp(`29991231T000000Z: its manifest names it ${id}: the backup was copied or renamed`))

  // A newer format, named with both versions.
  const future = join(tempDir(t), 'future')
  cpSync(root, future, { recursive: true })
  const path = join(future, id!, 'manifest.json')
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), format: 99, plinth: '9.0.0' }))
  const target = tempDir(t)
  const newer = await runCli(['restore', future], { PLINTH_DATA_DIR: target })
  assert.equal(newer.code, 2)
  assert.match(newer.stderr, /format 99 \(written by Plinth 9\.0\.0\); this Plinth 0\.1\.0 reads format 2 and older/)
  assert.deepEqual(readdirSync(target), [])
  // Not a backup at all: an empty directory, and one of other files.
  const other = tempDir(t)
  writeFileSync(join(other, 'notes.txt'), 'not a backup')
  for (const path of [tempDir(t), other, join(other, 'missing'), join(other, 'notes.txt')]) {
    const refused = await runCli(['restore', path], { PLINTH_DATA_DIR: target })
    assert.equal(refused.code, 2, refused.stderr)
    assert.match(
      refused.stderr,
      /is not a Plinth backup|does not exist|notes\.txt is a file; give a backup directory \(ROOT\/<id>, the one holding manifest\.json and db\/data\.mdb\) or a backup root/,
    )
  }
  assert.deepEqual(readdirSync(target), [])
})

test('a backup holds no usable secret: the installation secret is in a file of its own, restore needs it and checks the signature with it, and a ticket claiming a year is refused; a data directory that kept the secret in its database moves it out', async (t) => {
  const data = tempDir(t)
  const root = join(tempDir(t), 'backups')
  const server = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY })
  const keyFile = join(data, 'installation.key')
  assert.equal(statSync(keyFile).mode & 0o777, 0o600, 'the secret file is its owner’s alone')
  const secret = readSecretFile(keyFile)
  const site = (await call(server.port, 'POST', '/v1/websites', { name: 'Tickets', kind: 'static', subdomain: 'tickets' })).body
  assert.equal((await runCli(['backup', root], { PLINTH_DATA_DIR: data })).code, 0)

  // Not one file of the backup holds the secret, in bytes or in hex; the manifest is signed.
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))
  for (const file of files(root)) {
    const bytes = readFileSync(file)
    assert.equal(bytes.indexOf(secret), -1, `${file} holds the secret`)
    assert.equal(bytes.indexOf(Buffer.from(secret.toString('hex'))), -1, `${file} holds the secret in hex`)
  }
  const [{ id }] = backups(root)
  assert.match(JSON.parse(readFileSync(join(root, id!, 'manifest.json'), 'utf8')).signature, /^[0-9a-f]{64}$/)

  // A deploy ticket signed with the installation's key (what a backup of before gave away): within the
  // five minutes tickets live it deploys; claiming a year, it is refused however it is signed.
  const issued = (await call(server.port, 'POST', `/v1/websites/${site.id}/deploy/tickets`)).body.ticket as string
  const [payload] = issued.slice('wd_'.length).split('.')
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString())
  const forge = (expiresAt: number, first: number) =>
    signToken(deriveKey(secret, 'deploy tickets'), 'wd_', { ...claims, nonce: `n${expiresAt}`, first }, expiresAt)
  const deployWith = async (ticket: string) => {
    const form = new FormData()
    form.append('files', new Blob(['<p>forged</p>']), 'index.html')
    const res = await fetch(`http://127.0.0.1:${server.port}/public/v1/deploys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ticket}` },
      body: form,
    })
    return { status: res.status, body: (await res.json()) as { message: string } }
  }
  const yearAhead = Date.now() + 365 * 24 * 3600_000
  const refused = await deployWith(forge(yearAhead, yearAhead))
  assert.equal(refused.status, 401, JSON.stringify(refused.body))
  assert.match(refused.body.message, /claims to live longer than the 5 minutes tickets are issued for/)
  const fresh = Date.now() + 4 * 60_000
  assert.equal((await deployWith(forge(fresh, fresh))).status, 201, 'a ticket of a ticket’s lifetime, signed with the same key')
  await stop(server)

  // A restore needs the secret, kept apart from the backups; another installation's does not check out.
  const target = tempDir(t)
  const without = await runCli(['restore', root], { PLINTH_DATA_DIR: target })
  assert.equal(without.code, 2)
  assert.match(
    without.stderr,
    /a backup never holds the installation's secret, and there is none at [^\n]*installation\.key: give the one kept apart from the backups \(PLINTH_SECRET_FILE=FILE, or --secret FILE\)/,
  )
  const otherKey = join(tempDir(t), 'other.key')
  writeFileSync(otherKey, `${'ab'.repeat(32)}\n`, { mode: 0o600 })
  const another = await runCli(['restore', root, '--secret', otherKey], { PLINTH_DATA_DIR: target })
  assert.equal(another.code, 2)
  assert.match(another.stderr, /the manifest's signature does not match the installation's secret/)
  assert.deepEqual(readdirSync(target), [])
  const restored = await runCli(['restore', root, '--secret', keyFile], { PLINTH_DATA_DIR: target })
  assert.equal(restored.code, 0, restored.stderr)
  assert.ok(readSecretFile(join(target, 'installation.key')).equals(secret), 'the restored data directory reads the same secret')

  // A data directory from before: the secret in its database and no file. A backup refuses it; a start
  // moves the secret into the file (the same bytes: every webhook secret and share link stays).
  const secrets = open({ path: join(target, 'db'), maxDbs: 128 }).openDB<Buffer, string>({ name: 'secrets', encoding: 'binary' })
  await secrets.put('webhook-signing', secret)
  await secrets.close()
  unlinkSync(join(target, 'installation.key'))
  const old = await runCli(['backup', join(tempDir(t), 'old')], { PLINTH_DATA_DIR: target, PLINTH_SECRET_FILE: keyFile })
  assert.equal(old.code, 2)
  assert.match(old.stderr, /the database still holds the installation's secret[^\n]*start the server on this data directory once/)
  const moved = await spawnPlinth(t, { PLINTH_DATA_DIR: target })
  assert.match(moved.stderr(), /moved the installation's secret out of the database into [^\n]*installation\.key/)
  assert.equal((await call(moved.port, 'GET', `/v1/websites/${site.id}`)).status, 200, 'the restored server answers')
  assert.ok(readSecretFile(join(target, 'installation.key')).equals(secret))
  assert.equal(
    (await runCli(['backup', join(tempDir(t), 'after')], { PLINTH_DATA_DIR: target })).code,
    0,
    'backed up once the secret left the database',
  )
  await stop(moved)
})
