import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { assertAccessible, assertNoSidewaysScroll, needsChromium, sharedChromium, watchedPage } from '../helpers/browser.js'
import { confirm, ownerInBrowser, website } from '../helpers/dashboard.js'
import { rawRequest } from '../helpers/http.js'
import { createWebsite, tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * The dashboard as a person goes through it, in Debian's Chromium (the second half of the dashboard's
 * tests; dashboard.test.ts has the first): the whole path from the setup link to a member who joins,
 * large deploys, the settings, and every screen at a phone's width. No script error anywhere, and
 * axe-core on every screen.
 */

const skip = needsChromium

/** One Chromium for the file's tests (each makes its own contexts). */
const chromiumOf = sharedChromium()

/** 3 MiB of bytes that do not compress (a photo's worth), different for each seed. */
function image3MiB(seed: number): Buffer {
  const bytes = Buffer.alloc(3 * 1024 * 1024)
  for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE((i * seed) >>> 0, i)
  return bytes
}
const CHROME_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'

test(
  "a person's whole path: set up through the link, a site made, a folder with a 3 MiB image deployed through a ticket (a cut connection resumed, nothing sent twice) and published, a password, a member invited who joins in another browser, the audit log by names",
  { skip },
  async (t) => {
    const browser = await chromiumOf(t)
    const { server, page, problems, app, open } = await ownerInBrowser(t, browser)
    await assertAccessible(page, 'websites')
    // The setup link, used: opened again, it says so at once (no form to fill in vain).
    await page.goto(`${app}/setup#token=${server.plinth.installation.setupCode}`)
    await page.getByText('This setup link was already used or has expired').waitFor()
    assert.equal(await page.locator('#link-form').isHidden(), true)
    await assertAccessible(page, 'used setup link')

    // A site made here, a folder with a large image deployed with progress, published.
    await open('', /Websites/)
    await page.getByRole('button', { name: 'New website' }).click()
    await page.getByLabel('Name', { exact: true }).fill('Portfolio')
    await page.getByLabel('Subdomain (optional)').fill('portfolio')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { name: 'Addresses' }).waitFor()
    await assertAccessible(page, 'new site')
    const siteId = new URL(page.url()).pathname.split('/')[3]
    const folder = tempDir(t)
    mkdirSync(join(folder, 'portfolio', 'img'), { recursive: true })
    const image = image3MiB(40503)
    writeFileSync(join(folder, 'portfolio', 'index.html'), '<h1>My work</h1><img src="img/cover.jpg" alt="cover">')
    writeFileSync(join(folder, 'portfolio', 'img', 'cover.jpg'), image)
    // It goes through a ticket (a file over 1 MiB). The first PUT of the image's bytes is cut off; later
    // ones go through, slowly enough to watch the progress.
    const puts: string[] = []
    await page.route('**/public/v1/deploys/uploads/**', async (route) => {
      puts.push(route.request().url())
      if (puts.length === 1) return route.abort('connectionreset')
      // A pause that is the point: each PUT slowed so the progress can be watched.
      await new Promise((resolve) => setTimeout(resolve, 300))
      await route.continue()
    })
    await page.getByLabel('Folder to deploy').setInputFiles(join(folder, 'portfolio'))
    const progress = page.getByRole('status', { name: 'Deploy progress' })
    await progress.filter({ hasText: 'The connection dropped: resuming where it stopped' }).waitFor()
    await progress.filter({ hasText: /Uploading: \d of 2 files/ }).waitFor()
    await page.getByRole('status').filter({ hasText: 'Version 2 is the new draft: 2 files, 3.0 MiB' }).waitFor()
    assert.equal(puts.length, 2, 'the image sent again once, after the cut')
    // The cut connection's console line is the one expected.
    const cut = problems.findIndex((p) => /ERR_CONNECTION_RESET/.test(p))
    if (cut >= 0) problems.splice(cut, 1)
    const [head] = (await server.api('GET', `/v1/websites/${siteId}/source/versions`)).body.items
    assert.deepEqual([head.version, head.message], [2, 'Deployed from the dashboard (2 files)'], 'the ticket deploy carries its message')
    await page.getByRole('button', { name: 'Publish version 2' }).click()
    await confirm(page, 'Publish version 2')
    await page.waitForFunction("!document.body.textContent.includes('Publish version 2')")
    assert.ok(
      (await rawRequest(server.plinth.port, 'portfolio.localhost', '/img/cover.jpg')).body.equals(image),
      'the live image, byte for byte',
    )
    await assertAccessible(page, 'overview after a large deploy')
    // The same image in a changed folder: the server has it, so no byte of it is sent again.
    writeFileSync(join(folder, 'portfolio', 'index.html'), '<h1>My work, again</h1><img src="img/cover.jpg" alt="cover">')
    await page.getByLabel('Folder to deploy').setInputFiles(join(folder, 'portfolio'))
    await page.getByRole('status').filter({ hasText: 'Version 3 is the new draft: 2 files' }).waitFor()
    assert.equal(puts.length, 2, 'nothing sent twice')
    assert.equal(
      (await rawRequest(server.plinth.port, 'draft--portfolio.localhost', '/')).body.toString(),
      '<h1>My work, again</h1><img src="img/cover.jpg" alt="cover">',
    )

    // A password on the site.
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByLabel('Password', { exact: true }).fill('only-friends')
    await page.getByRole('button', { name: 'Set password' }).click()
    await page.getByRole('status').filter({ hasText: 'visitors now need this password' }).waitFor()
    assert.equal((await rawRequest(server.plinth.port, 'portfolio.localhost', '/')).status, 401)

    // A member invited; the link opened in another browser: a wrong one says so, the right one (same tab) names who, where and how.
    await open('/members', /Members of/)
    await page.getByLabel('Email').fill('mia@example.com')
    await page.getByRole('button', { name: 'Invite', exact: true }).click()
    const link = ((await page.getByText(/\/app\/invite#code=/).textContent()) ?? '').match(/http\S+#code=\S+/)![0]
    await assertAccessible(page, 'members with an invitation')
    const mia = await watchedPage(browser)
    t.after(() => assert.deepEqual(mia.problems, [], "no script or console error in the member's browser"))
    await mia.page.goto(link.replace(/#code=.*/, '#code=not-a-real-code'))
    await mia.page.getByText('This invitation link was already used, or it is not a valid link').waitFor()
    assert.equal(await mia.page.locator('#link-form').isHidden(), true)
    await assertAccessible(mia.page, 'invalid invitation')
    await mia.page.goto(link)
    const said = mia.page.getByRole('status').filter({ hasText: 'invited mia@example.com' })
    await said.waitFor()
    assert.match(
      (await said.textContent()) ?? '',
      /^Olive Owner invited mia@example\.com to the workspace .+ as full editor\. The invitation is open until/,
    )
    assert.equal(await mia.page.locator('#link-form').isVisible(), true)
    await assertAccessible(mia.page, 'invitation')
    // A password too short: the page says so in words and keeps what was typed; a reload posts nothing again.
    await mia.page.getByLabel('Email (the invited one)').fill('mia@example.com')
    await mia.page.getByLabel('Your name (new accounts)').fill('Mia Member')
    await mia.page.getByLabel('Password').fill('short')
    await mia.page.getByRole('button', { name: 'Accept' }).click()
    await mia.page
      .getByRole('alert')
      .filter({ hasText: /^Password must be 10 to \d+ characters long/ })
      .waitFor()
    assert.equal(await mia.page.getByLabel('Your name (new accounts)').inputValue(), 'Mia Member')
    assert.equal(await mia.page.getByLabel('Email (the invited one)').inputValue(), 'mia@example.com')
    await assertAccessible(mia.page, 'invitation refused')
    const posts: string[] = []
    mia.page.on('request', (request) => void (request.method() === 'POST' && posts.push(request.url())))
    await mia.page.reload()
    await mia.page.getByRole('heading', { name: 'Accept an invitation' }).waitFor()
    assert.deepEqual(posts, [], 'a reload of the refused form posts nothing')
    await mia.page.goto(link)
    await said.waitFor()
    await mia.page.getByLabel('Email (the invited one)').fill('mia@example.com')
    await mia.page.getByLabel('Your name (new accounts)').fill('Mia Member')
    await mia.page.getByLabel('Password').fill('mia-password-1')
    await mia.page.getByRole('button', { name: 'Accept' }).click()
    const joined = mia.page.getByRole('status').filter({ hasText: /^You joined .+ as full editor/ })
    await joined.waitFor()
    await mia.page.getByRole('link', { name: 'Portfolio', exact: true }).waitFor()
    await assertAccessible(mia.page, 'joined workspace')

    // The owner reads the audit log by names.
    await open('/audit', 'Audit log')
    const table = page.getByRole('table', { name: 'Audit log' })
    await table.getByText('Member joined: Mia Member').waitFor()
    assert.match((await table.textContent()) ?? '', /Website published: Portfolio[\s\S]*Olive Owner/)
    assert.equal(await table.getByText('Portfolio').first().getAttribute('title'), siteId)
    await assertAccessible(page, 'audit log by names')
  },
)

test(
  'the dashboard: members and invitations, a website’s settings (rename, trash, restore), analytics with its chart and share link',
  { skip },
  async (t) => {
    const browser = await chromiumOf(t)
    const { server, page, open } = await ownerInBrowser(t, browser)
    // Members: invite someone (this server sends no email: the link is to be passed on), the link shown once; revoke it.
    await open('/members', /Members of/)
    await page.getByRole('list', { name: 'Members' }).getByText('Olive Owner').waitFor()
    await assertAccessible(page, 'members')
    await page.getByLabel('Email').fill('newcomer@example.com')
    await page.getByRole('button', { name: 'Invite', exact: true }).click()
    await page.getByText('This server sends no email: send newcomer@example.com this link yourself').waitFor()
    assert.match((await page.getByText(/\/app\/invite#code=/).textContent()) ?? '', /\/app\/invite#code=/)
    const invitations = page.getByRole('list', { name: 'Invitations' })
    await invitations.getByText('newcomer@example.com').waitFor()
    await invitations.getByRole('button', { name: 'Revoke' }).click()
    await confirm(page, 'Revoke invitation')
    await page.getByText('No pending invitations.').waitFor()
    assert.equal((await server.api('GET', '/v1/members/invitations')).body.items.length, 0)

    // Analytics: page views served to browsers, drawn with uPlot; the public link on and off.
    const site = await createWebsite(server, { name: 'Busy', kind: 'static', subdomain: 'busy' })
    await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
      body: {
        files: [
          { path: 'index.html', content: '<h1>busy</h1>' },
          { path: 'about.html', content: 'about' },
        ],
      },
    })
    await server.api('POST', `/v1/websites/${site.id}/publish`)
    for (const path of ['/', '/', '/about']) await rawRequest(server.plinth.port, 'busy.localhost', path, { 'user-agent': CHROME_UA })
    await open(`/websites/${site.id}/analytics`, 'Page views')
    await page.getByTestId('chart').locator('canvas').waitFor()
    assert.equal(await page.getByTestId('pageviews').textContent(), '3')
    await page.getByTestId('realtime').filter({ hasText: /^3$/ }).waitFor()
    assert.match((await page.getByRole('table', { name: 'Pages' }).textContent()) ?? '', /\/\s*2[\s\S]*\/about\s*1/)
    await page.getByRole('button', { name: '24 hours' }).click()
    await page.getByRole('button', { name: '24 hours', pressed: true }).waitFor()
    await page.getByRole('img', { name: /Page views per hour/ }).waitFor()
    await assertAccessible(page, 'analytics')
    await page.getByRole('button', { name: 'Turn on the link' }).click()
    await page.getByRole('button', { name: 'Turn off the link' }).waitFor()
    const shared = (await website(server, site.id)).analytics.dashboardUrl
    assert.match(shared, /\/app\/share\/analytics\//)
    await page.getByText(shared).waitFor()
    await page.getByRole('button', { name: 'Turn off the link' }).click()
    await page.getByRole('button', { name: 'Turn on the link' }).waitFor()
    assert.equal((await website(server, site.id)).analytics.dashboardUrl, null)

    // Settings: rename, move to the trash and restore.
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('heading', { name: 'Name' }).waitFor()
    await assertAccessible(page, 'settings')
    // The name's limit (200): the count shows as it nears it, and a paste cut to it is said.
    const name = page.getByLabel('Name', { exact: true })
    await name.fill('n'.repeat(150))
    assert.equal(await page.getByText('of 200 characters').count(), 0, 'no count far from the limit')
    await name.fill('n'.repeat(170))
    await page.getByText('170 of 200 characters', { exact: true }).waitFor()
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    await name.fill('')
    await page.evaluate(`navigator.clipboard.writeText(${JSON.stringify('p'.repeat(300))})`)
    await name.focus()
    await page.keyboard.press('Control+V')
    await page
      .getByText('The pasted text made 300 characters: it was cut to the first 200, this field’s limit. 200 of 200 characters.')
      .waitFor()
    assert.equal((await name.inputValue()).length, 200)
    // The count is read with the field (its description), and goes once the person types on.
    assert.match((await name.getAttribute('aria-describedby')) ?? '', /-count/)
    await name.press('Backspace')
    await page.getByText('199 of 200 characters', { exact: true }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Busy Shop')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    assert.equal((await website(server, site.id)).name, 'Busy Shop')
    // A bad subdomain: the API's rule next to the field in a person's words (its label, no field path), the input kept.
    await page.getByLabel('Subdomain').fill('Not A Label')
    await page.getByRole('button', { name: 'Rename subdomain' }).click()
    const field = page.getByLabel('Subdomain')
    await page.waitForFunction("document.querySelector('[aria-invalid=true]') !== null")
    assert.equal(await field.inputValue(), 'Not A Label')
    assert.equal(
      await page.locator(`#${await field.getAttribute('aria-describedby')}`.replace(/:/g, '\\:')).textContent(),
      'Subdomain must be 1-56 lowercase letters, digits and inner hyphens.',
    )
    // A good one ends the old address at once: asked first, in a dialog named by what it does; cancelled, nothing moves.
    await field.fill('busy-two')
    await page.getByRole('button', { name: 'Rename subdomain' }).click()
    const renaming = page.getByRole('dialog', { name: 'Rename the subdomain to busy-two?' })
    assert.match((await renaming.textContent()) ?? '', /stops working at once/)
    await renaming.getByRole('button', { name: 'Cancel' }).click()
    assert.equal((await website(server, site.id)).subdomain, 'busy')
    await page.getByRole('button', { name: 'Rename subdomain' }).click()
    await confirm(page, 'Rename to busy-two')
    await waitUntil(async () => (await website(server, site.id)).subdomain === 'busy-two', 'the rename')
    await field.fill('busy')
    await page.getByRole('button', { name: 'Rename subdomain' }).click()
    await confirm(page, 'Rename to busy')
    await waitUntil(async () => (await website(server, site.id)).subdomain === 'busy', 'the rename back')
    // Inputs carry the limits the server checks.
    assert.deepEqual(
      [await field.getAttribute('maxlength'), await page.getByLabel('Description').getAttribute('maxlength')],
      ['56', '2000'],
    )
    // A description over the limit (past the input's own limit, as a script could send): the rule said plainly.
    await page.getByLabel('Description').evaluate((input: any) => {
      input.removeAttribute('maxlength')
      input.value = 'x'.repeat(2001)
    })
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Description can be at most 2,000 characters.').waitFor()
    // Password protection: set it (the site asks for it at once), see it on the Overview, remove it.
    await page.getByLabel('Password', { exact: true }).fill('open-sesame')
    await page.getByRole('button', { name: 'Set password' }).click()
    await page.getByRole('status').filter({ hasText: 'visitors now need this password' }).waitFor()
    assert.equal((await rawRequest(server.plinth.port, 'busy.localhost', '/')).status, 401)
    await page.getByRole('link', { name: 'Overview' }).click()
    await page.getByText('password protected').waitFor()
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('button', { name: 'Remove password' }).click()
    await confirm(page, 'Remove password')
    await page.getByRole('button', { name: 'Set password' }).waitFor()
    assert.equal((await rawRequest(server.plinth.port, 'busy.localhost', '/')).status, 200)
    await page.getByRole('button', { name: 'Move to trash' }).click()
    await confirm(page, 'Move to trash')
    await page.getByRole('heading', { name: 'In the trash' }).waitFor()
    assert.notEqual((await website(server, site.id)).deletedAt, null)
    assert.equal((await rawRequest(server.plinth.port, 'busy.localhost', '/')).status, 404)
    // The Overview of a trashed website says so and offers Restore, with no dead draft address.
    await page.getByRole('link', { name: 'Overview' }).click()
    await page.getByRole('heading', { name: 'In the trash' }).waitFor()
    assert.equal(await page.getByText('draft--busy').count(), 0)
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('button', { name: 'Restore' }).click()
    await confirm(page, 'Restore website')
    await page.getByRole('heading', { name: 'Delete' }).waitFor()
    assert.equal((await website(server, site.id)).deletedAt, null)
    // A folder without an index.html deploys, and the panel says the site's address has no page.
    const folder = tempDir(t)
    mkdirSync(join(folder, 'pages'))
    writeFileSync(join(folder, 'pages', 'about.html'), '<h1>About</h1>')
    await page.getByRole('link', { name: 'Overview' }).click()
    await page.getByLabel('Folder to deploy').setInputFiles(join(folder, 'pages'))
    await page.getByRole('status').filter({ hasText: 'is the new draft: 1 file,' }).waitFor()
    assert.match((await page.getByRole('note', { name: 'No home page' }).textContent()) ?? '', /no index\.html at its top/)
  },
)

test('the dashboard at 390 px wide: every screen fits without sideways scrolling, and passes axe-core', { skip }, async (t) => {
  const browser = await chromiumOf(t)
  const { server, page, open } = await ownerInBrowser(t, browser, {}, { width: 390, height: 844 })
  const site = await createWebsite(server, {
    name: 'A site with a rather long name for a narrow phone screen',
    kind: 'static',
    subdomain: 'a-rather-long-subdomain-for-a-phone',
  })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'x' }] } })
  await server.api('POST', `/v1/websites/${site.id}/domains`, { body: { hostname: 'www.a-long-custom-domain-name.example.com' } })
  const storage = await createWebsite(server, { name: 'Files', kind: 'storage', subdomain: 'phone-files' })
  const screens: [string, RegExp | string][] = [
    ['', /Websites/],
    [`/websites/${site.id}`, 'Addresses'],
    [`/websites/${site.id}/versions`, 'Versions'],
    [`/websites/${site.id}/analytics`, 'Page views'],
    [`/websites/${site.id}/forms`, 'Webhooks'],
    [`/websites/${site.id}/domains`, 'Add a domain'],
    [`/websites/${site.id}/settings`, 'Subdomain'],
    [`/websites/${storage.id}/files`, 'Upload files'],
    ['/keys', 'API keys'],
    ['/members', /Members of/],
    ['/audit', 'Audit log'],
    ['/account', 'Account'],
  ]
  for (const [path, heading] of screens) {
    await open(path, heading)
    await assertNoSidewaysScroll(page, path || 'home')
    await assertAccessible(page, `${path || 'home'} at 390 px`)
  }
  // The header's workspace picker and the person's name are shown whole on the screen, not cut off.
  for (const [what, element] of [
    ['the workspace picker', page.getByRole('combobox', { name: 'Workspace' })],
    ["the person's name", page.getByRole('banner').getByText('Olive Owner')],
  ] as const) {
    const box = await element.boundingBox()
    assert.ok(box !== null && (await element.isVisible()), `${what} is shown at 390 px`)
    assert.ok(box.x >= 0 && box.x + box.width <= 390 && box.width >= 40, `${what} at 390 px: ${JSON.stringify(box)}`)
  }
})
