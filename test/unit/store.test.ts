/*
 * The storage layer's contract, on a real LMDB environment in a temporary directory: what every
 * actor relies on when it commits and reads.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { makeVersion } from '../../actors/website/versions.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import { CorruptRecordError, Store } from '../../core/store/store.js'
import { tempDir } from '../helpers/server.js'

const website = (id: string, over: Partial<WebsiteRecord> = {}): WebsiteRecord => ({
  v: 1,
  id,
  orgId: 'org_1',
  seq: 1,
  name: id,
  kind: 'static',
  slug: id,
  subdomain: id,
  description: null,
  headVersion: 1,
  publishedVersion: null,
  createdAt: 1,
  updatedAt: 1,
  deletedAt: null,
  suspendedAt: null,
  suspendedReason: null,
  ...over,
})

test('a commit is all or nothing, and what it committed is there after a reopen', async (t) => {
  const dir = tempDir(t)
  const store = new Store(dir)
  await store.commit(() => {
    store.websites.put('ws_a', website('ws_a'))
    store.labels.put('a', 'ws_a')
  })
  await assert.rejects(
    store.commit(() => {
      store.websites.put('ws_b', website('ws_b'))
      store.labels.put('b', 'ws_b')
      throw new Error('changed my mind')
    }),
    /changed my mind/,
  )
  assert.equal(store.websites.get('ws_b'), undefined)
  assert.equal(store.labels.get('b'), undefined)
  await store.close()
  const again = new Store(dir)
  t.after(() => again.close())
  assert.equal(again.websites.get('ws_a')?.name, 'ws_a')
  assert.equal(again.labels.get('a'), 'ws_a')
})

test('records are validated when read: a wrong schema version or shape is refused, never guessed at', async (t) => {
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  await store.commit(() => {
    store.websites.put('ws_v2', { ...website('ws_v2'), v: 2 } as unknown as WebsiteRecord)
    store.websites.put('ws_bad', { ...website('ws_bad'), kind: 'spaceship' } as unknown as WebsiteRecord)
  })
  assert.throws(
    () => store.websites.get('ws_v2'),
    (e: unknown) => e instanceof CorruptRecordError && /schema version 2 is not one this build reads/.test(e.message),
  )
  assert.throws(() => store.websites.get('ws_bad'), CorruptRecordError)
  // A lookup key too long for LMDB names nothing: absent, not an exception.
  assert.equal(store.websites.get('x'.repeat(5000)), undefined)
  assert.equal(store.labels.get('x'.repeat(5000)), undefined)
})

test('ranges come in key order, end exclusive, forwards or backwards; versions newest first', async (t) => {
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  const actor = { kind: 'api_key' as const, id: 'key_1', name: null }
  await store.commit(() => {
    for (const seq of [3, 1, 2]) store.websitesByOrg.put(['org_1', 'live', seq], `ws_${seq}`)
    store.websitesByOrg.put(['org_1', 'trash', 9], 'ws_9')
    for (const n of [1, 2, 3]) store.versions.put(['ws_1', n], makeVersion('ws_1', n, {}, 'deploy', null, actor, n))
  })
  const ids = (reverse: boolean) =>
    [
      ...store.websitesByOrg.range({
        start: reverse ? ['org_1', 'live', 99] : ['org_1', 'live', 0],
        end: reverse ? ['org_1', 'live', 1] : ['org_1', 'live', 3],
        reverse,
      }),
    ].map((e) => e.value)
  assert.deepEqual(ids(false), ['ws_1', 'ws_2'])
  assert.deepEqual(ids(true), ['ws_3', 'ws_2'])
  assert.deepEqual(
    [...store.versionsOf('ws_1')].map((v) => v.version),
    [3, 2, 1],
  )
  assert.deepEqual(
    [...store.versionsOf('ws_1', 3)].map((v) => v.version),
    [2, 1],
  )
})

test('content is stored once under its hash, with its variants, and read back as a copy', async (t) => {
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  const hash = 'f'.repeat(64)
  await store.commit(() => store.putContent(hash, Buffer.from('first'), { gzip: Buffer.from('gz'), br: null }))
  await store.commit(() => store.putContent(hash, Buffer.from('second'), null))
  const read = store.getBlob(hash)!
  assert.equal(read.toString(), 'first')
  read.fill(0)
  assert.equal(store.getBlob(hash)!.toString(), 'first')
  assert.deepEqual(
    [store.hasVariant(hash, 'gzip'), store.hasVariant(hash, 'br'), store.getVariant(hash, 'gzip')?.toString()],
    [true, false, 'gz'],
  )
  // Sequence numbers only grow, also across commits.
  const seqs: number[] = []
  for (let i = 0; i < 3; i++) await store.commit(() => seqs.push(store.nextSeq()))
  assert.ok(seqs[0] < seqs[1] && seqs[1] < seqs[2], JSON.stringify(seqs))
})

test('blobs are counted by the versions and builds that name them: the last one removed takes the blob and its variants; an old data directory is counted once', async (t) => {
  const dir = tempDir(t)
  const actor = { kind: 'api_key' as const, id: 'key_1', name: null }
  const shared = 'a'.repeat(64)
  const own = 'b'.repeat(64)
  const entry = (hash: string) => ({ hash, size: 1, contentType: 'text/plain' })
  // Written the way a data directory from before counting was: plain puts, no references.
  const old = new Store(dir)
  await old.commit(() => {
    old.putContent(shared, Buffer.from('s'), { gzip: Buffer.from('gz'), br: null })
    old.putContent(own, Buffer.from('o'), null)
    old.versions.put(['ws_1', 2], makeVersion('ws_1', 2, { '/a': entry(shared), '/b': entry(own) }, 'deploy', null, actor, 2))
    old.versions.put(['ws_2', 2], makeVersion('ws_2', 2, { '/a': entry(shared) }, 'deploy', null, actor, 2))
  })
  await old.close()
  const store = new Store(dir)
  t.after(() => store.close())
  await store.ensureBlobReferences()
  assert.deepEqual([store.blobReferences(shared), store.blobReferences(own)], [2, 1])
  await store.ensureBlobReferences()
  assert.equal(store.blobReferences(shared), 2, 'counted once')
  // A third version naming the shared blob, then the first website's versions removed.
  await store.commit(() =>
    store.putVersion(['ws_2', 3], makeVersion('ws_2', 3, { '/a': entry(shared), '/c': entry(shared) }, 'deploy', null, actor, 3)),
  )
  assert.equal(store.blobReferences(shared), 4)
  await store.commit(() => store.removeVersion(['ws_1', 2]))
  assert.equal(store.hasBlob(own), false, 'no version names it any more')
  assert.equal(store.hasBlob(shared), true)
  await store.commit(() => {
    store.removeVersion(['ws_2', 2])
    store.removeVersion(['ws_2', 3])
  })
  assert.deepEqual([store.hasBlob(shared), store.hasVariant(shared, 'gzip'), store.blobReferences(shared)], [false, false, 0])
})

test('a blob file another record is about to name is never removed by a release of the same bytes', async (t) => {
  const { writeFile } = await import('node:fs/promises')
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  const upload = async (name: string) => {
    const path = store.files.uploadPath(name)
    await writeFile(path, 'the same bytes')
    return path
  }
  // One website's shared file names the bytes, then its record goes: the count is zero.
  const first = await store.blobs.adopt(await upload('upl_a'))
  await store.commit(() => store.fileRefs.add(first.hash, 1))
  first.unpin()
  await store.commit(() => store.fileRefs.add(first.hash, -1))
  // Meanwhile another website finalizes the same bytes: placed (the copy already there is kept) and
  // pinned, its commit still to come, when the first website's release runs.
  const second = await store.blobs.adopt(await upload('upl_b'))
  assert.equal(second.hash, first.hash)
  await store.blobs.release([first.hash])
  assert.ok(store.files.holds(first.hash), 'a pinned file stays')
  await store.commit(() => store.fileRefs.add(second.hash, 1))
  second.unpin()
  await store.blobs.release([first.hash])
  assert.ok(store.files.holds(first.hash), 'a file a record names stays')
  // Once nothing names it, it goes with its counter.
  await store.commit(() => store.fileRefs.add(second.hash, -1))
  await store.blobs.release([first.hash])
  assert.equal(store.files.holds(first.hash), false)
  assert.equal(store.fileRefs.get(first.hash), 0)
})

test('bytes held for a commit about to name them (a deploy of large files already sent) outlive a release', async (t) => {
  const { writeFile } = await import('node:fs/promises')
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  const path = store.files.uploadPath('upl_large')
  await writeFile(path, 'a large file')
  const kept = await store.blobs.adopt(path)
  await store.commit(() => store.fileRefs.add(kept.hash, 1))
  kept.unpin()
  // The deploy holds the bytes; the sweeper lets go of the organization's last reference meanwhile.
  const unhold = store.blobs.hold([kept.hash])
  await store.commit(() => store.fileRefs.add(kept.hash, -1))
  await store.blobs.release([kept.hash])
  assert.ok(store.files.holds(kept.hash), 'held bytes stay')
  unhold()
  await store.blobs.release([kept.hash])
  assert.equal(store.files.holds(kept.hash), false, 'once let go and named by nothing, they go')
})

test('while a backup runs no blob file is removed: releases wait, and run (each checked again) when it ends', async (t) => {
  const { writeFile } = await import('node:fs/promises')
  const store = new Store(tempDir(t))
  t.after(() => store.close())
  const adopt = async (name: string, text: string) => {
    const path = store.files.uploadPath(name)
    await writeFile(path, text)
    const adopted = await store.blobs.adopt(path)
    await store.commit(() => store.fileRefs.add(adopted.hash, 1))
    adopted.unpin()
    return adopted.hash
  }
  const [dropped, renamed] = [await adopt('upl_a', 'dropped during the backup'), await adopt('upl_b', 'named again during it')]
  const resume = store.blobs.pauseReleases()
  // The database copy names both; during the backup both lose their last reference, and one is named again.
  await store.commit(() => {
    store.fileRefs.add(dropped, -1)
    store.fileRefs.add(renamed, -1)
  })
  await store.blobs.release([dropped, renamed])
  assert.ok(store.files.holds(dropped) && store.files.holds(renamed), 'kept for the backup')
  await store.commit(() => store.fileRefs.add(renamed, 1))
  await resume()
  assert.equal(store.files.holds(dropped), false, 'released once the backup ended')
  assert.ok(store.files.holds(renamed), 'named again meanwhile: kept')
})
