import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ManualClock } from '../../core/clock.js'
import { loadConfig } from '../../core/config.js'
import { silentLogger } from '../../core/log.js'
import { startPlinth } from '../../plinth/start.js'
import { rawRequest } from '../helpers/http.js'
import { ADMIN_KEY, tempDir } from '../helpers/server.js'

/** Start-up activates nothing: a site's actor is made on the first request to one of its hosts. */
test('after a restart nothing is activated until a host is asked for; a site then serves on its first request', async (t) => {
  const dir = tempDir(t)
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN_KEY })
  const first = await startPlinth({ config, clock: new ManualClock(), log: silentLogger })
  const call = async (port: number, method: string, path: string, body?: unknown) =>
    (
      await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json() as Promise<any>
  for (const label of ['one', 'two', 'three']) {
    const w = await call(first.port, 'POST', '/v1/websites', { name: label, kind: 'static', subdomain: label })
    await call(first.port, 'POST', `/v1/websites/${w.id}/deploy/json`, { files: [{ path: 'index.html', content: `live ${label}` }] })
    await call(first.port, 'POST', `/v1/websites/${w.id}/publish`)
    await call(first.port, 'POST', `/v1/websites/${w.id}/deploy/json`, { files: [{ path: 'index.html', content: `draft ${label}` }] })
  }
  await first.close()

  const again = await startPlinth({ config, clock: new ManualClock(), log: silentLogger })
  t.after(() => again.close())
  assert.equal(again.registry.activeWebsites, 0)
  const live = await rawRequest(again.port, 'two.localhost', '/')
  assert.deepEqual([live.status, live.body.toString()], [200, 'live two'])
  assert.equal(again.registry.activeWebsites, 1)
  // Its draft host serves the head from the same actor; case and a trailing dot fold as before.
  assert.equal((await rawRequest(again.port, 'draft--two.localhost', '/')).body.toString(), 'draft two')
  assert.equal((await rawRequest(again.port, 'THREE.localhost.', '/')).body.toString(), 'live three')
  assert.equal(again.registry.activeWebsites, 2)
  // A label nobody holds, and a name that is not a site host, activate nothing.
  assert.equal((await rawRequest(again.port, 'nobody.localhost', '/')).status, 404)
  assert.equal((await rawRequest(again.port, 'a.b.localhost', '/')).status, 404)
  assert.equal(again.registry.activeWebsites, 2)
})
