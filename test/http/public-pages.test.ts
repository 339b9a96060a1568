import assert from 'node:assert/strict'
import { test } from 'node:test'
import { assertNoViolations, launchChromium, needsChromium } from '../helpers/browser.js'
import { createWebsite, startServer } from '../helpers/server.js'

/*
 * Every page Plinth shows someone who is not signed in, in Chromium with axe-core: not one violation of
 * any impact (moderate ones included: a page without a `main` landmark, a scrolling region the keyboard
 * cannot reach, a table header with no text).
 */

test(
  'every public page passes axe-core with no violation of any impact: docs, sign-in, claim, invitations, password pages, shared folders, a shared analytics dashboard, platform pages',
  { skip: needsChromium },
  async (t) => {
    const s = await startServer(t)
    const origin = s.origin
    const port = s.plinth.port

    // A site behind a password, a storage site with a folder (and one behind a password), a shared analytics link.
    const locked = await createWebsite(s, { name: 'Locked', kind: 'static', subdomain: 'locked-page' })
    await s.api('POST', `/v1/websites/${locked.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: '<h1>hi</h1>' }] } })
    await s.api('POST', `/v1/websites/${locked.id}/publish`)
    assert.equal((await s.api('PUT', `/v1/websites/${locked.id}/password`, { body: { password: 'locked-page-1' } })).status, 200)
    const files = await createWebsite(s, { name: 'Files', kind: 'storage', subdomain: 'files-page' })
    const share = async (folder: string) => {
      const begun = await s.api('POST', `/v1/websites/${files.id}/objects/uploads`, {
        body: { folder, files: [{ name: 'notes.txt', byteSize: 5 }] },
      })
      assert.equal(begun.status, 201, JSON.stringify(begun.body))
      const upload = begun.body.files[0].upload
      const put = await fetch(upload.url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${port}`), {
        method: 'PUT',
        headers: upload.headers,
        body: 'hello',
      })
      assert.equal(put.status, 200)
      assert.equal(
        (await s.api('POST', `/v1/websites/${files.id}/objects/finalize`, { body: { ids: [begun.body.files[0].id] } })).status,
        200,
      )
      return begun.body.folder as string
    }
    const open = await share('open')
    const shut = await share('shut')
    assert.equal(
      (
        await s.api('PUT', `/v1/websites/${files.id}/objects/folders/${encodeURIComponent(shut)}/password`, {
          body: { password: 'shut-folder-1' },
        })
      ).status,
      200,
    )
    const analytics = await s.api('POST', `/v1/websites/${locked.id}/analytics/share`)
    assert.equal(analytics.status, 201)

    const browser = await launchChromium(t)
    // The pages' own CSP forbids inline scripts: bypassed only so axe's script can be added.
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    for (const [what, url] of [
      ['the guide', `${origin}/docs`],
      ['the API reference', `${origin}/docs/api`],
      ['sign-in', `${origin}/app/sign-in`],
      ['a claim link', `${origin}/app/claim`],
      ['an invitation link', `${origin}/app/invite`],
      ['a site’s password page', `http://locked-page.localhost:${port}/`],
      ['a shared folder', `http://files-page.localhost:${port}/${encodeURIComponent(open)}/`],
      ['a shared folder’s password page', `http://files-page.localhost:${port}/${encodeURIComponent(shut)}/`],
      ['a shared analytics dashboard', analytics.body.dashboardUrl.replace(/^http:\/\/[^/]+/, origin)],
      ['an address with no site', `http://nobody-here.localhost:${port}/`],
    ] as const) {
      await page.goto(url)
      await page.waitForLoadState('load')
      // The API reference is the guide's page with 27,000 elements (its tables): color contrast, half of
      // axe's 15 s there, depends only on the stylesheet both share, and is checked on the guide, which
      // uses every element the reference does (headings, tables, code, links).
      await assertNoViolations(page, `${what} (${url})`, url.endsWith('/docs/api') ? { withoutRules: ['color-contrast'] } : {})
    }
  },
)
