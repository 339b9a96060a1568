import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { watchedPage } from './browser.js'
import { startServer, type TestServer } from './server.js'

export interface Signed {
  server: TestServer
  page: Page
  problems: string[]
  app: string
  /** Goes to a screen (a path under /app) and waits until it has drawn. */
  open(path: string, heading: RegExp | string): Promise<void>
}

/** A fresh server whose owner set up their account through the one-time link, in Chromium. */
export async function ownerInBrowser(
  t: TestContext,
  browser: Browser,
  env: Record<string, string> = {},
  viewport?: { width: number; height: number },
): Promise<Signed> {
  const server = await startServer(t, env)
  const app = `http://localhost:${server.plinth.port}/app`
  const { page, problems } = await watchedPage(browser, viewport === undefined ? {} : { viewport })
  t.after(() => assert.deepEqual(problems, [], 'no script or console error on any screen'))
  await page.goto(`${app}/setup#token=${server.plinth.installation.setupCode}`)
  assert.equal(await page.getByRole('main').count(), 1, "the platform's own pages have one main landmark")
  await page.fill('#name', 'Olive Owner')
  await page.fill('#email', 'owner@example.com')
  await page.fill('#password', 'owner-password-1')
  await page.click('button[type=submit]')
  await page.waitForURL(app)
  await page.getByRole('heading', { level: 1, name: /Websites/ }).waitFor()
  // The icon every page load asks the host for.
  const icon = await page.request.get(`http://localhost:${server.plinth.port}/favicon.ico`)
  assert.deepEqual([icon.status(), icon.headers()['content-type']], [200, 'image/svg+xml'])
  const open = async (path: string, heading: RegExp | string) => {
    await page.goto(`${app}${path}`)
    await page.getByRole('heading', { name: heading }).first().waitFor()
  }
  return { server, page, problems, app, open }
}

/** What the API says of a website now. */
export async function website(server: TestServer, id: string): Promise<any> {
  return (await server.api('GET', `/v1/websites/${id}`)).body
}

/** Confirms the dialog a button opened, by the confirming button's name. */
export async function confirm(page: Page, name: string | RegExp): Promise<void> {
  const dialog = page.getByRole('dialog')
  await dialog.getByRole('button', { name }).click()
  await dialog.waitFor({ state: 'hidden' })
}
