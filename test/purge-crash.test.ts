import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import type { Store } from '../core/store/store.js'
import { startPlinth } from '../plinth/start.js'
import { tempDir } from './helpers/server.js'

const CHILD = fileURLToPath(new URL('./helpers/purge-child.js', import.meta.url))
const SHARED = Buffer.from('a shared file only the doomed storage site has')

function runChild(dir: string, crashAt: string): Promise<{ signal: NodeJS.Signals | null; code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', CHILD], {
      env: { PATH: process.env.PATH, PURGE_CHILD_DIR: dir, PLINTH_CRASH_AT: crashAt },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => (out += c))
    child.stderr.on('data', (c: Buffer) => (err += c))
    child.on('exit', (code, signal) => resolve({ code, signal, out, err }))
  })
}

/** What of a website is in the store and on disk, part by part. */
function partsOf(store: Store, id: string, kind: 'static' | 'storage'): Record<string, boolean> {
  const any = (iterable: Iterable<unknown>) => [...iterable].length > 0
  const parts: Record<string, boolean> = {
    record: store.websites.get(id) !== undefined,
    versions: any(store.versions.range({ start: [id, 0], end: [id, Number.MAX_SAFE_INTEGER] })),
  }
  if (kind === 'static') {
    parts.submissions = any(store.submissionsByForm.range({ start: [id, '', 0], end: [id, '\uffff', 0] }))
    parts.formStats = any(store.formStats.range({ start: [id, ''], end: [id, '\uffff'] }))
  } else {
    parts.objects = any(store.objectsByPath.range({ start: [id, ''], end: [id, '\uffff'] }))
    parts.bytesCounted = store.storageBytes.get([id]) > 0
    parts.fileOnDisk = existsSync(store.files.path(createHash('sha256').update(SHARED).digest('hex')))
  }
  return parts
}

function wholeOrNone(parts: Record<string, boolean>): 'whole' | 'none' | 'half' {
  const values = Object.values(parts)
  return values.every(Boolean) ? 'whole' : values.every((v) => !v) ? 'none' : 'half'
}

// The anonymous sweep purges the credential's website, then its storage site; each purge is the
// website's transaction, then its shared files, CMS content and assets, then the purge's record.
const STEPS: { at: string; website: 'whole' | 'none'; storage: 'whole' | 'none' }[] = [
  { at: 'purge:before', website: 'whole', storage: 'whole' },
  { at: 'purge:website-removed', website: 'none', storage: 'whole' },
  { at: 'purge:files-removed', website: 'none', storage: 'whole' },
  { at: 'purge:cms-removed', website: 'none', storage: 'whole' },
  { at: 'purge:assets-removed', website: 'none', storage: 'whole' },
  { at: 'purge:before#2', website: 'none', storage: 'whole' },
  { at: 'purge:website-removed#2', website: 'none', storage: 'none' },
  { at: 'purge:files-removed#2', website: 'none', storage: 'none' },
  { at: 'purge:assets-removed#2', website: 'none', storage: 'none' },
  { at: 'none', website: 'none', storage: 'none' },
]

for (const step of STEPS) {
  test(`a SIGKILL at ${step.at} of a purge leaves each website whole or, after the restart, entirely gone`, async (t) => {
    const dir = tempDir(t)
    const run = await runChild(dir, step.at)
    const ids = JSON.parse(run.out.split('\n')[0]) as { websiteId: string; storageId: string }
    if (step.at === 'none') assert.equal(run.code, 0, run.err)
    else assert.equal(run.signal, 'SIGKILL', `the child reached ${step.at}: ${run.out} ${run.err}`)

    // The next start finishes what the crash interrupted, before its first request.
    const plinth = await startPlinth({
      config: loadConfig({ PORT: '0', HOST: '127.0.0.1', PLINTH_DATA_DIR: dir }),
      log: silentLogger,
      anonymousSweepMs: 0,
    })
    t.after(() => plinth.close())
    const website = partsOf(plinth.store, ids.websiteId, 'static')
    const storage = partsOf(plinth.store, ids.storageId, 'storage')
    assert.equal(wholeOrNone(website), step.website, `the website: ${JSON.stringify(website)}`)
    assert.equal(wholeOrNone(storage), step.storage, `the storage site: ${JSON.stringify(storage)}`)
    assert.deepEqual([...plinth.store.purges.range({ start: '', end: '\uffff' })], [], 'no purge is left half done')
    // The storage site's bytes no longer count against its organization once it is gone.
    if (step.storage === 'none') assert.equal(plinth.store.storageBytes.get([ids.storageId]), 0)
  })
}
