import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startServer } from '../helpers/server.js'
import { setUpOwner } from '../helpers/people.js'

test('expired sessions, setup codes, OAuth codes and tokens leave the store at the sweep; live ones stay', async (t) => {
  const server = await startServer(t, {}, { actorIdleMs: 0 })
  const { registry } = server.plinth
  const { store } = server.plinth
  const count = (table: { range(o: { start: string; end: string }): Iterable<unknown> }) =>
    [...table.range({ start: '', end: '\uffff' })].length
  const owner = await setUpOwner(server)
  await registry.people.startSession((await owner.api('GET', '/v1/me')).body.person.id)
  assert.equal(count(store.sessions), 2)
  assert.equal(await registry.sweepExpired(), 0, 'nothing has expired yet')
  assert.equal(count(store.sessions), 2)
  // A week idle ends both sessions; the sweep removes them.
  server.clock.advance(8 * 24 * 3600_000)
  assert.equal(await registry.sweepExpired(), 2)
  assert.equal(count(store.sessions), 0)
  assert.equal((await owner.api('GET', '/v1/me')).status, 401)
})
