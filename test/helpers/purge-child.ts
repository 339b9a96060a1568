/**
 * The process the purge crash test kills (test/purge-crash.test.ts): with PURGE_CHILD_DIR set, it
 * starts Plinth on that data directory with a manual clock, makes an anonymous website (with a form
 * submission) and a storage site (with a shared file), prints their ids, moves the clock past the
 * credential's 7 days and sweeps. PLINTH_CRASH_AT kills it at one step of the purge. Without the
 * variable (the test runner loads every file under dist/test) it does nothing.
 */
import { ManualClock } from '../../core/clock.js'
import { loadConfig } from '../../core/config.js'
import { silentLogger } from '../../core/log.js'
import { startPlinth } from '../../plinth/start.js'
import { DAY, hostOf, staticSite } from './anonymous.js'
import { rawPost } from './http.js'

const dir = process.env.PURGE_CHILD_DIR
if (dir !== undefined) {
  const clock = new ManualClock()
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', PLINTH_DATA_DIR: dir })
  const plinth = await startPlinth({ config, clock, log: silentLogger, anonymousSweepMs: 0 })
  const base = `http://127.0.0.1:${plinth.port}`
  const call = async (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined || Buffer.isBuffer(body) ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
    })
    const json = (await response.json()) as any
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
    return json
  }
  const { token } = await call('POST', '/public/v1/anonymous/credentials', '')
  const site = await call('POST', '/public/v1/anonymous/sites', token, staticSite('Doomed', { '/index.html': 'only on the doomed site' }))
  const posted = await rawPost(plinth.port, hostOf(site.urls.published), '/_platform/forms/contact', 'message=hello', {
    'content-type': 'application/x-www-form-urlencoded',
  })
  if (posted.status !== 200) throw new Error(`form post: ${posted.status}`)
  const storage = await call('POST', '/public/v1/anonymous/sites', token, { name: 'Doomed files', kind: 'storage' })
  const bytes = Buffer.from('a shared file only the doomed storage site has')
  const begun = await call('POST', `/public/v1/anonymous/sites/${storage.id}/objects/uploads`, token, {
    files: [{ name: 'notes.txt', byteSize: bytes.length }],
  })
  const upload = begun.files[0]
  await call('PUT', new URL(upload.upload.url).pathname, token, bytes, {
    'content-range': `bytes 0-${bytes.length - 1}/${bytes.length}`,
    'content-type': 'application/octet-stream',
  })
  await call('POST', `/public/v1/anonymous/sites/${storage.id}/objects/finalize`, token, { ids: [upload.id] })
  process.stdout.write(`${JSON.stringify({ websiteId: site.id, storageId: storage.id, orgId: site.workspaceId ?? null })}\n`)
  clock.advance(8 * DAY)
  await plinth.registry.sweepAnonymous()
  await plinth.close()
  process.stdout.write('swept\n')
}
