import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { freshRequest, keyedCall } from './helpers/http.js'
import { runCli, spawnPlinth } from './helpers/process.js'
import { archived, publishPage, stopPlinth } from './helpers/archive.js'
import { tempDir } from './helpers/server.js'
import { shareFiles } from './helpers/ticket.js'
import { API_POLL_MS, waitUntil } from './helpers/wait.js'
import { listSegments, readArchive } from '../core/backup/archive-format.js'
import { readSecretFile } from '../core/installation-secret.js'
import { listBackups } from '../core/backup/root.js'

/*
 * The continuous archive and point-in-time restore (issue 53, part 4), as an operator runs them:
 * PLINTH_BACKUP_ARCHIVE on a server, `plinth restore ROOT --at TIME` and `--position N` from a copy of
 * the root (what rclone or rsync makes off the machine), `plinth backup verify`, and the restored data
 * directory started and asked what the server answered then.
 */

const KEY = 'wb_' + 'A'.repeat(43)

const call = (port: number, method: string, path: string, body?: unknown) => keyedCall(port, KEY, method, path, body)

test('PLINTH_BACKUP_ARCHIVE: a base and every commit archived within a second; a copy of the root restores to a time or an entry, byte for byte; verify checks every segment and a changed one is refused; a restored server begins a new archive; a new base prunes the segments before the one before it', async (t) => {
  const dir = tempDir(t, 'plinth-archive-')
  const data = join(dir, 'data')
  const root = join(dir, 'root')
  const env = { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY, PLINTH_BACKUP_ARCHIVE: root }
  let server = await spawnPlinth(t, env)
  // The archive begins with a base the server takes itself.
  await waitUntil(() => listBackups(root).some((b) => b.complete), "the archive's base backup", 15_000, API_POLL_MS)
  assert.match(server.stderr(), /the backup archive begins/)
  const secret = readSecretFile(join(data, 'installation.key'))
  const site = (await call(server.port, 'POST', '/v1/websites', { name: 'Kept', kind: 'static', subdomain: 'kept' })).body
  await publishPage(server.port, KEY, site.id, '<h1>one</h1>')
  const storage = (await call(server.port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const bytes = randomBytes(250_000)
  const [file] = await shareFiles(server.port, KEY, storage.id, [{ name: 'one.bin', bytes }])
  const link = new URL(file!.url)
  const atOne = await archived(server.port, KEY)
  assert.equal(readArchive(root, secret).entries.at(-1)!.position.seq, atOne, 'the archive ends at the position /metrics says')
  const first = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 5))
  await publishPage(server.port, KEY, site.id, '<h1>two</h1>')
  assert.equal((await call(server.port, 'DELETE', `/v1/websites/${storage.id}/objects/${file!.objectId}`)).status, 200)
  const last = await archived(server.port, KEY)

  // Off the machine: a copy of the root (what rclone or rsync makes), restored to the first moment.
  const copy = join(dir, 'copy')
  cpSync(root, copy, { recursive: true })
  const another = join(dir, 'another')
  cpSync(root, another, { recursive: true })
  const restore = (into: string, ...args: string[]) =>
    runCli(['restore', copy, ...args], { PLINTH_DATA_DIR: into, PLINTH_SECRET_FILE: join(data, 'installation.key') })
  const atFirst = join(dir, 'at-first')
  const back = await restore(atFirst, '--at', new Date(first).toISOString())
  assert.equal(back.code, 0, back.stderr)
  assert.match(
    back.stdout,
    /Restored [^\n]* to entry \d+, committed [^\n]*: the backup [^\n]* \(at entry \d+\), then \d+ archived entries replayed/,
  )
  const then = await spawnPlinth(t, { PLINTH_DATA_DIR: atFirst, PLINTH_SECRET_FILE: join(data, 'installation.key') })
  assert.equal(`${(await freshRequest(then.port, 'kept.localhost', '/')).status}`, '200')
  assert.equal((await freshRequest(then.port, 'kept.localhost', '/')).body.toString(), '<h1>one</h1>')
  assert.ok((await freshRequest(then.port, link.hostname, link.pathname)).body.equals(bytes), 'the shared file, byte for byte, as it was')
  await stopPlinth(then)
  // To the last entry: the second version, the file deleted.
  const atLast = join(dir, 'at-last')
  const latest = await restore(atLast, '--position', String(last))
  assert.equal(latest.code, 0, latest.stderr)
  const now = await spawnPlinth(t, { PLINTH_DATA_DIR: atLast, PLINTH_SECRET_FILE: join(data, 'installation.key') })
  assert.equal((await freshRequest(now.port, 'kept.localhost', '/')).body.toString(), '<h1>two</h1>')
  assert.equal((await freshRequest(now.port, link.hostname, link.pathname)).status, 404)
  await stopPlinth(now)
  // Points the archive does not hold are named.
  const before = await restore(join(dir, 'nothing'), '--at', '2001-01-01T00:00:00Z')
  assert.equal(before.code, 2, before.stderr)
  assert.match(before.stderr, /the archive holds nothing committed at or before 2001-01-01T00:00:00\.000Z \(it holds entries \d+ to \d+/)

  // verify checks every segment; a changed byte is found, and a restore from it refused.
  const verified = await runCli(['backup', 'verify', copy], { PLINTH_DATA_DIR: data })
  assert.equal(verified.code, 0, verified.stderr)
  assert.match(verified.stdout, /archive: 1 segments, entries \d+ to \d+/)
  assert.match(verified.stdout, /every archive segment authentic, the chain without a gap/)
  const segment = listSegments(copy)[0]!.path
  const changed = readFileSync(segment)
  changed[changed.length - 40] ^= 1
  writeFileSync(segment, changed)
  const damaged = await runCli(['backup', 'verify', copy], { PLINTH_DATA_DIR: data })
  assert.equal(damaged.code, 1)
  assert.match(damaged.stderr, /archive: [^\n]*\.seg: chunk \d+ \(at byte \d+\) does not authenticate/)
  const refused = await restore(join(dir, 'refused'), '--position', String(last))
  assert.equal(refused.code, 2)
  assert.match(refused.stderr, /does not check out[^\n]*nothing was restored/)
  assert.equal(existsSync(join(dir, 'refused', 'db')), false)

  // Restarted, the server goes on with the same archive (a new segment); a restored one begins a new archive.
  await stopPlinth(server)
  server = await spawnPlinth(t, env)
  assert.match(server.stderr(), /the backup archive goes on/)
  await publishPage(server.port, KEY, site.id, '<h1>three</h1>')
  await archived(server.port, KEY)
  assert.equal(listSegments(root).length, 2)
  // A server on the data directory restored to the first moment, archiving into a root whose archive went on past it: another history.
  const moved = await spawnPlinth(t, {
    PLINTH_DATA_DIR: atFirst,
    PLINTH_SECRET_FILE: join(data, 'installation.key'),
    PLINTH_BACKUP_ARCHIVE: another,
  })
  await waitUntil(() => /took the backup archive's base/.test(moved.stderr()), 'a new base for the new archive', 15_000, API_POLL_MS)
  assert.match(moved.stderr(), /the backup archive holds another history than this data directory's[^\n]*moved aside, a new archive begins/)
  await stopPlinth(moved)
  // Nor is a damaged archive appended to.
  const onDamaged = await spawnPlinth(t, {
    PLINTH_DATA_DIR: atLast,
    PLINTH_SECRET_FILE: join(data, 'installation.key'),
    PLINTH_BACKUP_ARCHIVE: copy,
  })
  await waitUntil(
    () => /took the backup archive's base/.test(onDamaged.stderr()),
    'a new base after the damaged archive',
    15_000,
    API_POLL_MS,
  )
  assert.match(onDamaged.stderr(), /the backup archive's last segment is damaged: moved aside, a new archive begins here/)
  await stopPlinth(onDamaged)

  // Two new bases: the first segment (every entry before the second-newest base) goes; the archive still checks out.
  for (let i = 0; i < 2; i++) {
    const taken = await runCli(['backup', root], { PLINTH_DATA_DIR: data })
    assert.equal(taken.code, 0, taken.stderr)
  }
  assert.deepEqual(
    listSegments(root).map((s) => s.number),
    [2],
  )
  const still = await runCli(['backup', 'verify', root], { PLINTH_DATA_DIR: data })
  assert.equal(still.code, 0, still.stderr)
  await stopPlinth(server)
})
