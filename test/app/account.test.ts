import assert from 'node:assert/strict'
import { test } from 'node:test'
import { assertAccessible, needsChromium, sharedChromium, watchedPage } from '../helpers/browser.js'
import { confirm, ownerInBrowser } from '../helpers/dashboard.js'
import { rawPost } from '../helpers/http.js'
import { Browserless } from '../helpers/people.js'
import { linkIn, smtpEnv, startSmtp } from '../helpers/smtp.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * People who look after themselves, in Debian's Chromium against a real SMTP server: the account
 * screen (name, password, email confirmed by a link, sessions), a forgotten password, and invitations
 * that arrive by mail and land the invitee in the workspace they joined.
 */

const skip = needsChromium
const chromiumOf = sharedChromium()

test(
  'the account screen: a name saved, a password changed (other sessions out, this one kept), a new email confirmed by the link sent to it (the old address told, with no link), a session signed out from the list, and a forgotten password reset by mail',
  { skip },
  async (t) => {
    const smtp = await startSmtp(t)
    const browser = await chromiumOf(t)
    const { server, page, open, app } = await ownerInBrowser(t, browser, smtpEnv(smtp))
    // The same person signed in elsewhere too (a laptop at home).
    const elsewhere = new Browserless(server)
    await elsewhere.signIn('owner@example.com', 'owner-password-1')

    await open('/account', 'Account')
    const sessions = page.getByRole('list', { name: 'Sessions' })
    await sessions.getByRole('listitem').nth(1).waitFor()
    const mine = sessions.getByRole('listitem').filter({ hasText: 'this session' })
    assert.match((await mine.textContent()) ?? '', /^Chrome \d+ on Linux · this session · signed in/)
    assert.equal(await sessions.getByRole('listitem').count(), 2)
    await assertAccessible(page, 'account')

    // The name.
    await page.getByLabel('Your name').fill('Olive Oyl')
    await page.getByRole('button', { name: 'Save the name' }).click()
    await page.getByRole('status').filter({ hasText: 'Your name is saved.' }).waitFor()
    await page
      .getByRole('definition')
      .filter({ hasText: /^Olive Oyl$/ })
      .waitFor()

    // The password: a wrong current one changes nothing; the right one ends the other session only.
    await page.getByLabel('Current password').first().fill('not-the-password')
    await page.getByLabel(/^New password/).fill('owner-password-2')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByText(/^Current password is not your current password; nothing was changed/).waitFor()
    assert.equal((await elsewhere.api('GET', '/v1/me')).status, 200, 'a refused change signs nobody out')
    await page.getByLabel('Current password').first().fill('owner-password-1')
    await page.getByLabel(/^New password/).fill('owner-password-2')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page
      .getByRole('status')
      .filter({ hasText: 'Your password is changed. 1 other session was signed out; this one stays.' })
      .waitFor()
    assert.equal((await elsewhere.api('GET', '/v1/me')).status, 401, 'the other session ended')
    await sessions.getByRole('listitem').filter({ hasText: 'this session' }).waitFor()
    assert.equal(await sessions.getByRole('listitem').count(), 1)
    await page.reload()
    await page.getByRole('heading', { name: 'Account' }).waitFor()

    // The email: a link to the new address, a notice (with no link) to the old one; the old one stays until the link is opened.
    await page.getByLabel('New email').fill('olive@example.org')
    await page.getByLabel('Current password').nth(1).fill('owner-password-2')
    await page.getByRole('button', { name: 'Change the email' }).click()
    await page.getByRole('status').filter({ hasText: 'A link is on its way to olive@example.org' }).waitFor()
    const [first, second] = [await smtp.message(1), await smtp.message(2)]
    const byTo = new Map([first, second].map((m) => [m.to && !Array.isArray(m.to) ? m.to.text : '', m]))
    const confirmation = byTo.get('olive@example.org')!
    const notice = byTo.get('owner@example.com')!
    assert.ok(confirmation !== undefined && notice !== undefined, 'one message to each address')
    assert.match(notice.text ?? '', /asked to change its address from owner@example\.com to olive@example\.org/)
    assert.doesNotMatch(notice.text ?? '', /confirm-email/, 'the old address cannot confirm the change')
    assert.equal((await server.api('GET', '/v1/me', { key: null, headers: {} })).status, 401)
    const still = new Browserless(server)
    await still.signIn('owner@example.com', 'owner-password-2')
    await page
      .getByText('A change to olive@example.org waits for the link sent there to be opened.')
      .waitFor({ state: 'detached' })
      .catch(() => undefined)
    await page.goto(linkIn(confirmation, '/confirm-email'))
    await page.getByRole('status').filter({ hasText: 'Confirm that you sign in with olive@example.org from now on.' }).waitFor()
    await assertAccessible(page, 'email confirmation link')
    await page.getByRole('button', { name: 'Use this address' }).click()
    await page.waitForURL(`${app}/account?email_changed=1`)
    await page.getByRole('status').filter({ hasText: 'Your new address is confirmed' }).waitFor()
    await page.getByText('You sign in with olive@example.org.').waitFor()
    assert.equal(
      (await new Browserless(server).post('/app/sign-in', { email: 'owner@example.com', password: 'owner-password-2' })).status,
      401,
    )
    const laptop = new Browserless(server)
    await laptop.signIn('olive@example.org', 'owner-password-2')
    // The link works once.
    await page.goto(linkIn(confirmation, '/confirm-email'))
    await page.getByRole('status').filter({ hasText: 'This confirmation link was already used' }).waitFor()

    // A session signed out from the list (the laptop, and the one made before the change).
    await open('/account', 'Account')
    await sessions.getByRole('listitem').nth(2).waitFor()
    const others = sessions.getByRole('listitem').filter({ hasNotText: 'this session' })
    await others.first().getByRole('button', { name: 'Sign out' }).click()
    await confirm(page, 'Sign out')
    await others.first().getByRole('button', { name: 'Sign out' }).click()
    await confirm(page, 'Sign out')
    await waitUntil(async () => (await sessions.getByRole('listitem').count()) === 1, 'the list to show this session only')
    assert.deepEqual([(await laptop.api('GET', '/v1/me')).status, (await still.api('GET', '/v1/me')).status], [401, 401])

    // A forgotten password, in another browser: from the sign-in page to the mail to a new password.
    const other = await watchedPage(browser)
    t.after(() => assert.deepEqual(other.problems, [], 'no script error in the other browser'))
    await other.page.goto(`${app}/sign-in`)
    await other.page.getByRole('link', { name: 'Forgot your password?' }).click()
    await other.page.getByLabel('Email').fill('olive@example.org')
    await other.page.getByRole('button', { name: 'Send the link' }).click()
    await other.page.getByText('a link to choose a new password is on its way').waitFor()
    const reset = await smtp.message(3)
    await other.page.goto(linkIn(reset, '/reset'))
    await other.page.getByRole('status').filter({ hasText: 'Choose the new password of your account' }).waitFor()
    await assertAccessible(other.page, 'reset link')
    await other.page.getByLabel(/^New password/).fill('owner-password-3')
    await other.page.getByRole('button', { name: 'Save the new password' }).click()
    await other.page.getByText('Your password was changed and every session of your account was signed out').waitFor()
    await other.page.getByLabel('Email').fill('olive@example.org')
    await other.page.getByLabel('Password').fill('owner-password-3')
    await other.page.getByRole('button', { name: 'Sign in' }).click()
    await other.page.getByRole('heading', { level: 1, name: /Websites/ }).waitFor()
    // The reset signed out the first browser too.
    await page.reload()
    await page.waitForURL(/\/app\/sign-in/)
  },
)

test(
  'an invitation by mail: sent again with a new link (the old one stops working), accepted in another browser into the workspace joined, where the next sign-in lands too',
  { skip },
  async (t) => {
    const smtp = await startSmtp(t)
    const browser = await chromiumOf(t)
    const { server, page, open, app } = await ownerInBrowser(t, browser, smtpEnv(smtp))
    const workspace = (await server.api('GET', '/v1/me')).body.organization
    await open('/members', /Members of/)
    await page.getByLabel('Email').fill('mia@example.com')
    await page.getByRole('button', { name: 'Invite', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'The invitation is on its way to mia@example.com' }).waitFor()
    const invited = await smtp.message(1)
    assert.match(invited.subject ?? '', new RegExp(`^Olive Owner invited you to ${workspace.name} on `))
    assert.match(invited.text ?? '', /as a full editor/)
    const firstLink = linkIn(invited, '/invite')
    await page.getByRole('button', { name: 'Send again to mia@example.com' }).click()
    const again = await smtp.message(2)
    const secondLink = linkIn(again, '/invite')
    assert.notEqual(secondLink, firstLink)
    await assertAccessible(page, 'members, an invitation sent again')

    const mia = await watchedPage(browser)
    t.after(() => assert.deepEqual(mia.problems, [], "no script error in the invitee's browser"))
    await mia.page.goto(firstLink)
    await mia.page.getByText('This invitation link was already used, or it is not a valid link').waitFor()
    await mia.page.goto(secondLink)
    await mia.page.getByRole('status').filter({ hasText: 'Olive Owner invited mia@example.com' }).waitFor()
    await mia.page.getByLabel('Email (the invited one)').fill('mia@example.com')
    await mia.page.getByLabel('Your name (new accounts)').fill('Mia Member')
    await mia.page.getByLabel('Password').fill('mia-password-1')
    await mia.page.getByRole('button', { name: 'Accept' }).click()
    await mia.page
      .getByRole('status')
      .filter({ hasText: /^You joined .+ as full editor/ })
      .waitFor()
    assert.equal(new URL(mia.page.url()).searchParams.get('workspace'), workspace.id)

    // Signed out and in again: the workspace joined, not her own empty one.
    await mia.page.getByRole('button', { name: 'Sign out' }).click()
    await mia.page.waitForURL(/\/app\/sign-in/)
    await mia.page.getByLabel('Email').fill('mia@example.com')
    await mia.page.getByLabel('Password').fill('mia-password-1')
    await mia.page.getByRole('button', { name: 'Sign in' }).click()
    await mia.page.waitForURL(`${app}?workspace=${workspace.id}`)
    await mia.page.getByRole('heading', { level: 1, name: /Websites/ }).waitFor()
  },
)

test(
  "a form's notifications set on the Forms screen: the owner's address at once, another confirmed by its link in a browser; a submission mailed to both, and unsubscribed from the message's link; a folder link shared by email_link opened with the password the mail carries",
  { skip },
  async (t) => {
    const smtp = await startSmtp(t)
    const browser = await chromiumOf(t)
    const { server, page, open } = await ownerInBrowser(t, browser, smtpEnv(smtp))
    const site = await server.api('POST', '/v1/websites', { body: { name: 'Bakery', kind: 'static', subdomain: 'bakery-mail' } })
    await server.api('POST', `/v1/websites/${site.body.id}/deploy/json`, {
      body: { files: [{ path: 'index.html', content: '<form method="post" action="/_platform/forms/contact"></form>' }] },
    })
    await server.api('POST', `/v1/websites/${site.body.id}/publish`)
    const post = (fields: Record<string, string>) =>
      rawPost(server.plinth.port, 'bakery-mail.localhost', '/_platform/forms/contact', new URLSearchParams(fields).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      })
    assert.equal((await post({ name: 'First' })).status, 200)

    await open(`/websites/${site.body.id}/forms/contact`, 'Email notifications')
    const list = page.getByRole('list', { name: 'Notified addresses' })
    for (const address of ['owner@example.com', 'sam@example.org']) {
      await page.getByLabel('Email to notify').fill(address)
      await page.getByRole('button', { name: 'Add', exact: true }).click()
      await list.getByText(address).waitFor()
    }
    await list.getByText('owner@example.com · receives them').waitFor()
    await list.getByText('sam@example.org · waits for its confirmation').waitFor()
    await assertAccessible(page, 'form notifications')

    // Sam opens the link in another browser and confirms.
    const sam = await watchedPage(browser)
    t.after(() => assert.deepEqual(sam.problems, [], "no script error in Sam's browser"))
    await sam.page.goto(linkIn(await smtp.message(1), '/notify-confirm'))
    await sam.page
      .getByRole('status')
      .filter({ hasText: 'Send the submissions of the form contact on Bakery to sam@example.org.' })
      .waitFor()
    await assertAccessible(sam.page, 'notification confirmation')
    await sam.page.getByRole('button', { name: 'Send them to me' }).click()
    await sam.page.getByText('sam@example.org receives the submissions of the form contact on Bakery from now on.').waitFor()
    await page.reload()
    await list.getByText('sam@example.org · receives them').waitFor()

    // A submission reaches both; Sam stops them from his message's link.
    assert.equal((await post({ name: 'Vera', email: 'vera@example.net' })).status, 200)
    const [a, b] = [await smtp.message(2), await smtp.message(3)]
    const toSam = [a, b].find((m) => (m.to && !Array.isArray(m.to) ? m.to.text : '') === 'sam@example.org')!
    await sam.page.goto((toSam.text ?? '').match(/http\S+\/app\/unsubscribe\/\S+/)![0])
    await sam.page.getByRole('button', { name: 'Stop them' }).click()
    await sam.page.getByText('sam@example.org no longer receives the submissions of the form contact on Bakery.').waitFor()
    await page.reload()
    await list.getByText('owner@example.com · receives them').waitFor()
    assert.equal(await list.getByText('sam@example.org').count(), 0)

    // A protected folder shared by email_link: the recipient opens the mail's link with the mail's password.
    const files = await server.api('POST', '/v1/websites', { body: { name: 'Files', kind: 'storage', subdomain: 'files-mail' } })
    const begun = await server.api('POST', `/v1/websites/${files.body.id}/objects/uploads`, {
      body: { folder: 'menu', files: [{ name: 'menu.txt', byteSize: 5 }] },
    })
    const upload = begun.body.files[0].upload
    await fetch(upload.url.replace(/^http:\/\/[^/]+/, server.origin), { method: 'PUT', headers: upload.headers, body: 'bread' })
    await server.api('POST', `/v1/websites/${files.body.id}/objects/finalize`, { body: { ids: [begun.body.files[0].id] } })
    const folder = begun.body.folder as string
    await server.api('PUT', `/v1/websites/${files.body.id}/objects/folders/${encodeURIComponent(folder)}/password`, {
      body: { password: 'menu-secret-1' },
    })
    const shared = await server.api('POST', `/v1/websites/${files.body.id}/email-link`, {
      body: { to: ['sam@example.org'], link: 'folder', folder, message: 'The menu for Saturday.', password: 'menu-secret-1' },
    })
    assert.equal(shared.status, 200, JSON.stringify(shared.body))
    const mail = await smtp.message(4)
    const link = (mail.text ?? '').match(/http:\/\/files-mail\S+/)![0]
    const password = /It asks for a password: (\S+)/.exec(mail.text ?? '')![1]
    await sam.page.goto(link)
    await sam.page.getByLabel('Password').fill(password)
    await sam.page.getByRole('button', { name: 'Continue' }).click()
    await sam.page.getByRole('link', { name: 'menu.txt' }).waitFor()
  },
)
