// What the archive and cluster tests do alike: a page published, a server stopped, the archive waited for.
import assert from 'node:assert/strict'
import { keyedCall } from './http.js'
import type { RunningPlinth } from './process.js'
import { waitUntil } from './wait.js'

/** Deploys `html` as a website's index page and publishes it (both answered as they should be). */
export async function publishPage(port: number, key: string, websiteId: string, html: string): Promise<void> {
  const deployed = await keyedCall(port, key, 'POST', `/v1/websites/${websiteId}/deploy/json`, {
    files: [{ path: 'index.html', content: html }],
  })
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
  const published = await keyedCall(port, key, 'POST', `/v1/websites/${websiteId}/publish`)
  assert.equal(published.status, 200, JSON.stringify(published.body))
}

/** SIGTERM, and a clean exit. */
export async function stopPlinth(server: RunningPlinth): Promise<void> {
  server.child.kill('SIGTERM')
  assert.deepEqual(await server.exited, { code: 0, signal: null })
}

/** Waits until a server's archive holds everything it committed or applied (its /metrics says nothing is behind); its position then. */
export async function archived(port: number, key: string): Promise<number> {
  const text = await waitUntil(
    async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text()
      return /^plinth_backup_archive_behind_entries 0$/m.test(text) ? text : null
    },
    'the archive to hold every commit',
    5000,
    50,
  )
  return Number(/^plinth_backup_archive_position (\d+)$/m.exec(text)![1])
}
