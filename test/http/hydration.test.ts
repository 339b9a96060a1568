import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { createWebsite, startServer } from '../helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
// CI installs Debian's chromium (.ci/run); elsewhere the test says how to get it.
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' ? 'needs Debian chromium: apt-get install chromium' : false

test('a published page hydrates in Chromium: a click changes React state, with no hydration error', { skip }, async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Hydrate', subdomain: 'hydrate' })
  const token = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const put = (file: unknown, content: string) =>
    s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: token, file, content } })
  await put(
    { type: 'component', name: 'Counter' },
    "import { useState } from 'react'\nexport function Counter() {\n  const [n, setN] = useState(0)\n  return <button onClick={() => setN(n + 1)}>clicked {n} times</button>\n}\n",
  )
  const head = (
    await put(
      { type: 'page', name: 'home' },
      "import { definePage } from '@platform'\nimport { Counter } from '@components/Counter'\nexport default definePage({ route: '/', metadata: { title: 'Hydration' }, render: () => <main><h1>Counter</h1><Counter /></main> })\n",
    )
  ).body.version
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/deployments/ensure`, { body: { version: head } })).body.status, 'ready')
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const html = (await s.site('hydrate.localhost', '/')).body.toString()
  const script = /<script type="module" src="(\/_platform\/assets\/p-[A-Za-z0-9]+\.js)"><\/script>/.exec(html)
  assert.ok(script, html)
  const asset = await s.site('hydrate.localhost', script[1])
  assert.equal(asset.status, 200)
  assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.equal(asset.headers['content-type'], 'text/javascript; charset=utf-8')

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.after(() => browser.close())
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('console', (message) => {
    // Failed loads are checked below by URL (browsers ask for /favicon.ico on their own).
    if ((message.type() === 'error' || message.type() === 'warning') && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(error.message))
  page.on('response', (response) => {
    if (response.status() >= 400 && new URL(response.url()).pathname !== '/favicon.ico')
      problems.push(`${response.status()} ${response.url()}`)
  })
  await page.goto(`http://hydrate.localhost:${s.plinth.port}/`)
  await page.waitForLoadState('networkidle')
  const button = page.locator('button')
  assert.equal(await button.textContent(), 'clicked 0 times')
  await button.click()
  await page.waitForFunction("document.querySelector('button')?.textContent === 'clicked 1 times'", undefined, { timeout: 5000 })
  await button.click()
  assert.equal(await button.textContent(), 'clicked 2 times')
  assert.deepEqual(problems, [])
})
