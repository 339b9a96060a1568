import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, type TestContext } from 'node:test'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
/** CI installs Debian's chromium (.ci/run); elsewhere a browser test says how to get it. */
export const needsChromium = !existsSync(CHROMIUM) && process.env.CI !== 'true' ? 'needs Debian chromium: apt-get install chromium' : false

/** Debian's Chromium, headless, with the flags this machine's closed network needs (and the test's own); closed when the test ends. */
export async function launchChromium(t: TestContext, extraArgs: string[] = []): Promise<Browser> {
  const browser = await launch(extraArgs)
  t.after(() => browser.close())
  return browser
}

/**
 * One Chromium for every test of a file (call it at the file's top level): launched by the first test
 * that asks, closed after the file's last test (a launch costs about a second of both cores). Each test
 * still makes its own contexts (cookies, storage), and they are closed when it ends.
 */
export function sharedChromium(): (t: TestContext) => Promise<Browser> {
  let launched: Promise<Browser> | undefined
  // Registered now, at the file's top level: a hook registered inside a test would run after that test.
  after(async () => {
    if (launched !== undefined) await (await launched.catch(() => null))?.close()
  })
  return async (t) => {
    // A browser that crashed or failed to start under an earlier test is launched again.
    const earlier = await launched?.catch(() => null)
    if (earlier === null || earlier?.isConnected() === false) launched = undefined
    const browser = await (launched ??= launch([]))
    t.after(async () => {
      for (const context of browser.contexts()) await context.close()
    })
    return browser
  }
}

async function launch(extraArgs: string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...extraArgs,
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/**
 * A page that records every script error and every console error (a test fails on any), and runs
 * axe-core on demand. The context bypasses the page's CSP only so axe's script can be added.
 */
export async function watchedPage(
  browser: Browser,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ bypassCSP: true, viewport: options.viewport ?? { width: 1280, height: 900 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`))
  page.on('console', (message) => {
    // A 4xx an action provoked on purpose is the browser's log line, not a script error; the screen says it.
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of (4\d\d)/.test(message.text()))
      problems.push(`console: ${message.text()}`)
  })
  return { context, page, problems }
}

/** axe-core on the page as it is now: no serious or critical violation. */
export async function assertAccessible(page: Page, screen: string): Promise<void> {
  if (!(await page.evaluate("'axe' in window"))) await page.addScriptTag({ content: axeSource })
  const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[]
  }
  const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(
    serious.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `axe-core on ${screen}`,
  )
}

/** axe-core finds nothing at all on the page, whatever the impact (public pages: anyone's first look at Plinth). */
export async function assertNoViolations(page: Page, screen: string, options: { withoutRules?: string[] } = {}): Promise<void> {
  if (!(await page.evaluate("'axe' in window"))) await page.addScriptTag({ content: axeSource })
  const rules = Object.fromEntries((options.withoutRules ?? []).map((rule) => [rule, { enabled: false }]))
  const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'], rules: ${JSON.stringify(rules)} })`)) as {
    violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[]
  }
  assert.deepEqual(
    result.violations.map(
      (v) =>
        `${v.id} (${v.impact}) ×${v.nodes.length}: ${v.help} at ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(', ')}`,
    ),
    [],
    `axe-core on ${screen}`,
  )
}

/** Nothing on the page is wider than the window: no sideways scrolling. */
export async function assertNoSidewaysScroll(page: Page, screen: string): Promise<void> {
  const { scroll, width } = (await page.evaluate('({ scroll: document.documentElement.scrollWidth, width: window.innerWidth })')) as {
    scroll: number
    width: number
  }
  assert.ok(scroll <= width, `${screen} scrolls sideways at ${width} px: the page is ${scroll} px wide`)
}
