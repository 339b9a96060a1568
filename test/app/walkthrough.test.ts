import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium, needsChromium } from '../helpers/browser.js'
import { ownerInBrowser } from '../helpers/dashboard.js'
import { createWebsite, tempDir } from '../helpers/server.js'

/*
 * The guide's dashboard walkthrough (docs/guide.md, "The dashboard"): the screens a person meets,
 * drawn in Chromium and photographed. `npm run docs:screens` writes them to docs/screens/ (run it when
 * a screen changes); the suite takes them into a temporary folder, so a walkthrough that no longer
 * reaches a screen fails, and every screenshot the guide shows must be one this walk takes.
 */

const DOCS = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'docs')

test(
  'the guide’s dashboard walkthrough reaches every screen it shows, and each screenshot it shows is one it takes',
  { skip: needsChromium },
  async (t) => {
    const out = process.env.PLINTH_SCREENS_DIR ?? tempDir(t)
    mkdirSync(out, { recursive: true })
    const browser = await launchChromium(t)
    const { server, page, open } = await ownerInBrowser(t, browser, {}, { width: 1200, height: 760 })
    const shop = await createWebsite(server, { name: 'Corner shop', kind: 'static', subdomain: 'corner-shop' })
    for (const html of ['<h1>Corner shop</h1>', '<h1>Corner shop</h1><p>Open every day.</p>'])
      await server.api('POST', `/v1/websites/${shop.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: html }] } })
    await server.api('POST', `/v1/websites/${shop.id}/publish`)
    await createWebsite(server, { name: 'Team handbook', kind: 'framework', subdomain: 'handbook' })
    const files = await createWebsite(server, { name: 'Shared files', kind: 'storage', subdomain: 'shared-files' })
    await server.api('POST', `/v1/websites/${shop.id}/domains`, { body: { hostname: 'www.corner-shop.example' } })

    const taken: string[] = []
    const shot = async (name: string) => {
      const bytes = await page.screenshot()
      writeFileSync(join(out, `${name}.png`), bytes)
      assert.ok(bytes.length > 5000 && bytes.subarray(1, 4).toString() === 'PNG', `${name}.png is a drawn screen`)
      taken.push(`${name}.png`)
    }
    await open('', /Websites/)
    await page.getByText('Corner shop').first().waitFor()
    await shot('websites')
    await page.getByRole('button', { name: 'New website' }).click()
    await page.getByLabel('Name', { exact: true }).fill('My portfolio')
    await shot('new-website')
    await open(`/websites/${shop.id}`, 'Addresses')
    await shot('overview')
    await open(`/websites/${shop.id}/versions`, 'Versions')
    await page.getByText('Files changed since version 2').first().click()
    await page.getByRole('list', { name: 'Files changed in version 3' }).waitFor()
    await shot('versions')
    await open(`/websites/${shop.id}/domains`, 'Add a domain')
    await page.getByText('www.corner-shop.example').first().waitFor()
    await shot('domains')
    await open(`/websites/${shop.id}/settings`, 'Password protection')
    await shot('settings')
    await open(`/websites/${files.id}/files`, 'Upload files')
    await shot('files')
    await open('/keys', 'API keys')
    await shot('keys')
    await open('/audit', 'Audit log')
    await page.getByRole('table', { name: 'Audit log' }).waitFor()
    await shot('audit')

    // The guide shows only what this walk takes, and every one of them is checked in.
    const guide = readFileSync(join(DOCS, 'guide.md'), 'utf8')
    const shown = [...guide.matchAll(/\]\(\/docs\/screens\/([a-z0-9-]+\.png)\)/g)].map((m) => m[1])
    assert.deepEqual([...shown].sort(), [...taken].sort(), 'the guide shows each screenshot of the walk once')
    for (const name of shown)
      assert.ok(existsSync(join(DOCS, 'screens', name)), `docs/screens/${name} is checked in (npm run docs:screens)`)
    // And the docs serve them.
    const served = await fetch(`${server.origin}/docs/screens/${shown[0]}`)
    assert.deepEqual([served.status, served.headers.get('content-type')], [200, 'image/png'])
    assert.equal((await fetch(`${server.origin}/docs/screens/..%2Fguide.md`)).status, 404)
  },
)
