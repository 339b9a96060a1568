import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { AnonymousAgent, hostOf, staticSite } from '../helpers/anonymous.js'
import { launchChromium, needsChromium } from '../helpers/browser.js'
import { caddyGlobals, needsCaddy, startCaddy } from '../helpers/caddy.js'
import { freePort } from '../helpers/http.js'
import { Browserless } from '../helpers/people.js'
import { startServer } from '../helpers/server.js'

/*
 * A hosted page plants a session cookie for the parent domain it shares with the dashboard
 * (`api.plinth.test` beside `*.plinth.test`, the layout of issue 37). Over plain http Plinth refuses to
 * start in that layout (test/process.test.ts); over https, the layout it points to, the session cookie
 * is `__Host-`, which no sibling host can set. Here a real Chromium visits the attacker's site through
 * Caddy (its internal CA), then the claim link an agent gave the person and the OAuth consent page,
 * signed out and signed in: the planted session acts for nobody, and each page says whom it acts as.
 */

const skip = needsChromium || needsCaddy

test(
  'a session cookie a hosted site plants acts for nobody in Chromium over https, signed out and signed in; claim and consent pages say who acts, with "Not you? Sign out"',
  { skip },
  async (t) => {
    const [httpPort, httpsPort] = [await freePort(), await freePort()]
    const origin = `https://api.plinth.test:${httpsPort}`
    const s = await startServer(t, { PLINTH_API_ORIGIN: origin, PLINTH_SITE_DOMAIN: 'plinth.test' })
    await startCaddy(
      t,
      (storage) => `${caddyGlobals(storage, httpPort, httpsPort)}
https://api.plinth.test, https://*.plinth.test {
\ttls internal
\treverse_proxy 127.0.0.1:${s.plinth.port}
}
`,
    )

    // The attacker signs in to their own account and publishes, without an account, a page that plants
    // their session for the parent domain under every name and path a browser would take.
    await s.plinth.registry.people.addPerson({ email: 'mallory@example.com', name: 'Mallory', password: 'mallory-password-1' })
    const mallory = new Browserless(s, origin)
    await mallory.signIn('mallory@example.com', 'mallory-password-1')
    const secret = /=(.*)$/.exec(mallory.cookie)![1]
    const plant = [
      `plinth_session=${secret}; Domain=plinth.test; Path=/app/claim`,
      `plinth_session=${secret}; Domain=plinth.test; Path=/`,
      `__Host-plinth_session=${secret}; Domain=plinth.test; Path=/; Secure`,
      `__Secure-plinth_session=${secret}; Domain=plinth.test; Path=/; Secure`,
    ]
    const trap = await new AnonymousAgent(s).issue()
    const trapSite = await trap.create(
      staticSite('Free icons', {
        '/index.html': `<title>icons</title><script>${plant.map((c) => `document.cookie=${JSON.stringify(c)};`).join('')}document.title='planted'</script>`,
      }),
    )
    assert.equal(trapSite.status, 201, JSON.stringify(trapSite.body))
    const trapUrl = `https://${hostOf(trapSite.body.urls.published)}:${httpsPort}/`

    // An OAuth application asking to act for whoever is signed in.
    const registered = await fetch(`${s.origin}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Helpful Agent', redirect_uris: ['http://127.0.0.1:9/cb'] }),
    })
    const { client_id } = (await registered.json()) as { client_id: string }
    const consentUrl = `${origin}/app/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
    })}`
    /** A site an agent published for the person, and the claim link it gives them. */
    const agentSite = async (name: string) => {
      const agent = await new AnonymousAgent(s).issue()
      const created = await agent.create(staticSite(name, { '/index.html': `<h1>${name}</h1>` }))
      assert.equal(created.status, 201, JSON.stringify(created.body))
      return { agent, id: created.body.id as string, link: `${origin}/app/claim#token=${agent.token}` }
    }
    const malloryWebsites = async () => (await mallory.api('GET', '/v1/websites')).body.items.length as number

    const browser = await launchChromium(t, ['--host-resolver-rules=MAP *.plinth.test 127.0.0.1, MAP plinth.test 127.0.0.1'])
    const context: BrowserContext = await browser.newContext({ ignoreHTTPSErrors: true })
    const page: Page = await context.newPage()
    const visitTrap = async () => {
      await page.goto(trapUrl)
      await page.waitForFunction("document.title === 'planted'")
      // The plant worked as far as a browser lets it: the parent-domain cookie is in the jar.
      const planted = (await context.cookies(`${origin}/app/claim`)).filter((c) => c.value === secret)
      assert.deepEqual(
        planted.map((c) => [c.name, c.domain]).sort(),
        [
          ['__Secure-plinth_session', '.plinth.test'],
          ['plinth_session', '.plinth.test'],
          ['plinth_session', '.plinth.test'],
        ],
        'the browser refused only the __Host- cookie with a Domain',
      )
    }

    // Signed out (the usual case for someone arriving from an agent's claim link).
    await visitTrap()
    const first = await agentSite('Victor’s portfolio')
    await page.goto(first.link)
    const signedOut = await page.locator('body').innerText()
    assert.match(signedOut, /Sign in to keep this site/)
    assert.doesNotMatch(signedOut, /Signed in as|Mallory|mallory@/)
    await page.getByRole('button', { name: 'Claim website' }).click()
    await page.waitForLoadState()
    assert.doesNotMatch(await page.locator('body').innerText(), /Website claimed/)
    assert.equal((await first.agent.status(first.id)).body.status, 'live', 'still anonymous: claimed by nobody')
    assert.equal(await malloryWebsites(), 0, 'nothing landed in the attacker’s workspace')
    await page.goto(consentUrl)
    assert.match(new URL(page.url()).pathname, /\/app\/sign-in$/, 'the consent page asks the person to sign in')
    assert.doesNotMatch(await page.locator('body').innerText(), /Mallory/)

    // Signed in as themselves, after the page planted its cookie again.
    await s.plinth.registry.people.addPerson({ email: 'victor@example.com', name: 'Victor', password: 'victor-password-1' })
    await page.goto(`${origin}/app/sign-in`)
    await page.getByLabel('Email').fill('victor@example.com')
    await page.getByLabel('Password').fill('victor-password-1')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${origin}/app`)
    await visitTrap()
    await page.goto(first.link)
    assert.match(
      await page.locator('body').innerText(),
      /Signed in as Victor \(victor@example\.com\): the site goes to your personal workspace/,
    )
    assert.ok(await page.getByRole('button', { name: 'Not you? Sign out' }).isVisible())
    await page.getByRole('button', { name: 'Claim website' }).click()
    await page.waitForURL(`${origin}/app/claim`)
    const claimed = await page.locator('body').innerText()
    assert.match(claimed, /Website claimed/)
    assert.match(claimed, /is now in Victor/)
    assert.equal(await malloryWebsites(), 0)
    await page.goto(consentUrl)
    const consent = await page.locator('body').innerText()
    assert.match(consent, /Connect Helpful Agent\?/)
    assert.match(consent, /Signed in as Victor \(victor@example\.com\)/)
    assert.doesNotMatch(consent, /Mallory/)

    // "Not you?" on the claim page signs out and keeps the token in the form; on the consent page it
    // signs out and comes back to the consent after signing in.
    const second = await agentSite('Victor’s notes')
    await page.goto(second.link)
    await page.getByRole('button', { name: 'Not you? Sign out' }).click()
    await page.waitForLoadState()
    assert.match(await page.locator('body').innerText(), /Sign in to keep this site/)
    assert.equal(await page.getByLabel('Site token').inputValue(), second.agent.token)
    await page.goto(consentUrl)
    assert.match(new URL(page.url()).pathname, /\/app\/sign-in$/)
    await page.getByLabel('Email').fill('victor@example.com')
    await page.getByLabel('Password').fill('victor-password-1')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/app\/oauth\/authorize\?/)
    await page.getByRole('button', { name: 'Not you? Sign out' }).click()
    await page.waitForURL(/\/app\/sign-in\?next=/)
    assert.equal(new URL(page.url()).searchParams.get('next'), new URL(consentUrl).pathname + new URL(consentUrl).search)
  },
)

test(
  'sites under a public suffix (test, localhost, github.io, co.uk) with the API at api.plinth under it: plain http refused at start; over https the platform host’s labels are no site’s, and a site’s planted cookies reach no dashboard in Chromium',
  { skip },
  async (t) => {
    const [httpPort, httpsPort] = [await freePort(), await freePort()]
    const variants = ['test', 'localhost', 'github.io', 'co.uk']
    const servers: { domain: string; origin: string; s: Awaited<ReturnType<typeof startServer>> }[] = []
    for (const domain of variants) {
      // Every `x.{domain}` is a registrable domain of its own, so no parent is shared by the list's
      // count; but the site named `plinth` would be `plinth.{domain}`, a parent of the API's host.
      await assert.rejects(
        startServer(t, { PLINTH_API_ORIGIN: `http://api.plinth.${domain}:${httpPort}`, PLINTH_SITE_DOMAIN: domain }),
        new RegExp(`PLINTH_API_ORIGIN.*is plain http on api\\.plinth\\.${domain.replace('.', '\\.')}, which lies under the sites' domain`),
      )
      const origin = `https://api.plinth.${domain}:${httpsPort}`
      const s = await startServer(t, { PLINTH_API_ORIGIN: origin, PLINTH_SITE_DOMAIN: domain })
      for (const label of ['plinth', 'api']) {
        const taken = await s.api('POST', '/v1/websites', { body: { name: `Mine ${label}`, kind: 'static', subdomain: label } })
        assert.equal(taken.status, 400, `${label}.${domain}: ${JSON.stringify(taken.body)}`)
        assert.match(taken.body.message, new RegExp(`"${label}" is reserved by the platform`))
        // A name that would make the label gets another one.
        const named = await s.api('POST', '/v1/websites', { body: { name: label, kind: 'static' } })
        assert.equal(named.status, 201, JSON.stringify(named.body))
        assert.notEqual(named.body.subdomain, label)
      }
      servers.push({ domain, origin, s })
    }

    await startCaddy(
      t,
      (storage) =>
        `${caddyGlobals(storage, httpPort, httpsPort)}${servers
          .map(
            ({ domain, s }) => `
https://api.plinth.${domain}, https://evil.${domain} {
\ttls internal
\treverse_proxy 127.0.0.1:${s.plinth.port}
}
`,
          )
          .join('')}`,
    )
    const browser = await launchChromium(t, [`--host-resolver-rules=${variants.flatMap((d) => [`MAP *.${d} 127.0.0.1`]).join(', ')}`])
    for (const { domain, origin, s } of servers) {
      await s.plinth.registry.people.addPerson({ email: 'mallory@example.com', name: 'Mallory', password: 'mallory-password-1' })
      const mallory = new Browserless(s, origin)
      await mallory.signIn('mallory@example.com', 'mallory-password-1')
      const secret = /=(.*)$/.exec(mallory.cookie)![1]
      const trap = await s.api('POST', '/v1/websites', { body: { name: 'Evil', kind: 'static', subdomain: 'evil' } })
      assert.equal(trap.status, 201, JSON.stringify(trap.body))
      const page = `<title>icons</title><script>${[
        `plinth_session=${secret}; Domain=${domain}; Path=/`,
        `plinth_session=${secret}; Domain=plinth.${domain}; Path=/`,
        `__Secure-plinth_session=${secret}; Domain=${domain}; Path=/; Secure`,
      ]
        .map((c) => `document.cookie=${JSON.stringify(c)};`)
        .join('')}document.title='planted'</script>`
      const deployed = await s.api('POST', `/v1/websites/${trap.body.id}/deploy/json`, {
        body: { files: [{ path: 'index.html', content: page }] },
      })
      assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
      assert.equal((await s.api('POST', `/v1/websites/${trap.body.id}/publish`)).status, 200)
      const context = await browser.newContext({ ignoreHTTPSErrors: true })
      const tab = await context.newPage()
      await tab.goto(`https://evil.${domain}:${httpsPort}/`)
      await tab.waitForFunction("document.title === 'planted'")
      assert.deepEqual(
        (await context.cookies(`${origin}/app/claim`)).filter((c) => c.value === secret),
        [],
        `a page at evil.${domain} set no cookie api.plinth.${domain} receives`,
      )
      // A signed-out person's claim page acts for nobody.
      const agent = await new AnonymousAgent(s).issue()
      const created = await agent.create(staticSite('Victor’s portfolio', { '/index.html': '<h1>mine</h1>' }))
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await tab.goto(`${origin}/app/claim#token=${agent.token}`)
      const claim = await tab.locator('body').innerText()
      assert.match(claim, /Sign in to keep this site/)
      assert.doesNotMatch(claim, /Signed in as|Mallory/)
      await context.close()
    }
  },
)
