import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { test } from 'node:test'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

const page = (body: string) => `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => ${body} })\n`
const GOOD = page('<p>fine</p>')
const LOOPING = page('{ for (;;) {} }')

/** A framework site with one page; `put` writes the page again. */
async function site(s: TestServer, name: string, content = GOOD) {
  const w = await createWebsite(s, { name })
  const lease = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const put = async (text: string) => {
    const res = await s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: lease, file: { type: 'page', name: 'home' }, content: text } })
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body))
  }
  await put(content)
  return { id: w.id as string, put }
}

async function check(s: TestServer, id: string) {
  const res = await s.api('POST', `/v1/websites/${id}/head/check`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body
}

/** Pids of the render processes this test process started (they run render.worker.js). */
function renderProcesses(): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'render.worker.js'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

test("a good site's check is not held behind bad sites' looping renders", async (t) => {
  const s = await startServer(t)
  const bad = await Promise.all([1, 2, 3, 4].map((i) => site(s, `Bad ${i}`)))
  const good = await site(s, 'Good')
  // Warm every site's typecheck program and bundler, so the race below is about renders.
  for (const w of [...bad, good]) assert.equal((await check(s, w.id)).ok, true)
  for (const w of bad) await w.put(LOOPING)
  const badChecks = bad.map((w) => check(s, w.id))
  for (const c of badChecks) c.catch(() => undefined)
  await new Promise((resolve) => setTimeout(resolve, 100))
  const started = Date.now()
  const result = await check(s, good.id)
  const waited = Date.now() - started
  t.diagnostic(`the good site's check took ${waited} ms (${JSON.stringify(result.timings)})`)
  assert.equal(result.ok, true, JSON.stringify(result))
  // One render process alone, in turn, would hold it for 4 x 5 s of CPU budget.
  assert.ok(waited < 4000, `the good site's check took ${waited} ms behind four looping sites (${JSON.stringify(result.timings)})`)
})

test('render processes retire when idle and come back on demand; a killed one is replaced, and a page it was rendering fails with what happened', async (t) => {
  const s = await startServer(t, {}, { renderIdleMs: 300 })
  const w = await site(s, 'Idle')
  assert.equal((await check(s, w.id)).ok, true)
  assert.ok(renderProcesses().length >= 1)
  await new Promise((resolve) => setTimeout(resolve, 800))
  assert.deepEqual(renderProcesses(), [], 'idle render processes retired')
  assert.equal((await check(s, w.id)).ok, true)
  // A render process that dies under a page (a crash, an operator's kill) costs that page only.
  // (The commit's background build renders too: every render process is killed while it loops.)
  await w.put(LOOPING)
  let answered = false
  const pending = check(s, w.id).finally(() => (answered = true))
  while (!answered) {
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const pid of renderProcesses()) process.kill(pid, 'SIGKILL')
  }
  const crashed = await pending
  assert.equal(crashed.ok, false)
  assert.match(crashed.renderFailures[0].message, /the render process crashed \(SIGKILL\) while rendering this page/)
  await w.put(GOOD)
  assert.equal((await check(s, w.id)).ok, true)
})
