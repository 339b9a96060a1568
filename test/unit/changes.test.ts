/*
 * The one path by which caches learn of writes made elsewhere (issue 51): two real LMDB stores opened
 * for a cluster, the first one's commits sealed into a list (the cluster's CommitLog seam, as the log
 * would carry them) and applied to the second, where People reads sessions and persons and a
 * website's password index its passwords: each cache takes every entry as it is applied, with no
 * reload when the node would lead.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { People } from '../../actors/identity/people.js'
import { Mailboxes } from '../../actors/mailboxes.js'
import { SitePasswords } from '../../actors/website/passwords.js'
import { systemClock as clock } from '../../core/clock.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import { digestOf, packEntry, type CommitLog, type Entry, type LogPosition } from '../../core/store/write-set.js'
import { Store } from '../../core/store/store.js'
import { tempDir } from '../helpers/server.js'

/** A log that keeps what the primary seals, in order: the test applies it to the replica. */
function listLog(): CommitLog & { entries: { entry: Entry; position: LogPosition }[] } {
  const entries: { entry: Entry; position: LogPosition }[] = []
  return {
    entries,
    seal(entry) {
      const position = { seq: entries.length + 1, epoch: 1, digest: digestOf(packEntry(entry)) }
      entries.push({ entry: { writes: [...entry.writes], blobs: [...entry.blobs] }, position })
      return { position, acked: position, sealed: Promise.resolve() }
    },
  }
}

test("a replica's caches take each applied entry's writes by table: sessions begun and ended, a person renamed, a site password set and removed", async (t) => {
  const primary = await Store.open(tempDir(t, 'plinth-changes-a-'), { replicated: true })
  const replica = await Store.open(tempDir(t, 'plinth-changes-b-'), { replicated: true })
  t.after(async () => {
    await primary.close()
    await replica.close()
  })
  const log = listLog()
  primary.replication!.useLog(log)
  let applied = 0
  const catchUp = async () => {
    for (; applied < log.entries.length; applied++) {
      const { entry, position } = log.entries[applied]!
      await replica.replication!.applyEntry(entry, position, async () => assert.fail('no blob file is listed'))
    }
  }
  const onPrimary = new People(primary, clock)
  // The replica's caches, made before any entry (as a node's registry is made once it follows).
  const onReplica = new People(replica, clock)
  const key = Buffer.alloc(32, 7)
  const passwordsA = new SitePasswords(primary, clock, new Mailboxes(), key)
  const passwordsB = new SitePasswords(replica, clock, new Mailboxes(), key)

  const ada = await onPrimary.addPerson({ email: 'ada@example.com', name: 'Ada', password: 'correct horse battery' })
  const session = await onPrimary.startSession(ada.id)
  assert.equal(onReplica.sessionPerson(session), undefined, 'not before the entries are applied')
  await catchUp()
  assert.equal(onReplica.person(ada.id)?.name, 'Ada')
  assert.equal(onReplica.sessionPerson(session)?.id, ada.id, 'a session begun on the primary')

  await onPrimary.updatePerson(ada.id, { name: 'Ada L.' })
  await onPrimary.endSession(session)
  await catchUp()
  assert.equal(onReplica.person(ada.id)?.name, 'Ada L.', 'a person renamed on the primary')
  assert.equal(onReplica.sessionPerson(session), undefined, 'a session ended on the primary')

  const actor = { kind: 'user' as const, id: ada.id, name: 'Ada' }
  const website = { id: 'ws_1', orgId: 'org_1' } as WebsiteRecord
  await passwordsA.set(website, actor, 'a site password')
  await catchUp()
  assert.equal(passwordsB.locked('ws_1'), true, 'a password set on the primary')
  await passwordsA.set(website, actor, null)
  await catchUp()
  assert.equal(passwordsB.locked('ws_1'), false, 'a password removed on the primary')
})
