/**
 * npm run bench:api — control-plane latencies through real HTTP (autocannon for the listing).
 *
 * Rows: a deploy of 100 files followed by a publish (p50, p99); a publish alone; reading a
 * 2,000-file listing (pages of 100). Rate limits hold here as anywhere, so the load is spread over
 * several API keys, each staying within its bucket. Then GET /v1/me by principal kind, and an
 * anonymous agent's first publish (credential, 25-file create, until the live host serves it).
 */
import { spawn } from 'node:child_process'
import { request } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { createHash, randomBytes } from 'node:crypto'
import { callApi, percentile, runBenchmark } from './main.js'

const PORT = 18490
const ADMIN = 'wb_' + 'a'.repeat(43)
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 40)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`

function call(key: string, method: string, path: string, body?: unknown): Promise<any> {
  return callApi(ORIGIN, key, method, path, body)
}

function row(name: string, samples: number[]): string {
  return `| ${name} | ${samples.length} | ${percentile(samples, 50).toFixed(1)} | ${percentile(samples, 99).toFixed(1)} | ${Math.max(...samples).toFixed(1)} |`
}

/** Principals of each kind for the /v1/me rows: each stays within its rate-limit bucket (burst 120); 25 OAuth token requests stay within the OAuth endpoints' per-address bucket (burst 30). */
const PRINCIPALS = 25
/** A person's session and OAuth token share the person's bucket: 50 + 50 stays under its burst of 120. */
const PER_PRINCIPAL = 50

/** A form post to the dashboard; returns the response (redirects not followed). */
function form(path: string, fields: Record<string, string>, cookie = ''): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', origin: `http://localhost:${PORT}` }
  if (cookie !== '') headers.cookie = cookie
  return fetch(ORIGIN + path, { method: 'POST', headers, body: new URLSearchParams(fields), redirect: 'manual' })
}

/**
 * GET /v1/me with an API key, a dashboard session and an OAuth access token: the same handler, so the
 * difference is the cost of authenticating each (issue 12: a session or a token costs no more than a key).
 */
async function authenticationRates(): Promise<
  Record<'api_key' | 'user' | 'oauth', { rps: number; p50: number; p99: number; non2xx: number }>
> {
  const headers: Record<'api_key' | 'user' | 'oauth', Record<string, string>[]> = { api_key: [], user: [], oauth: [] }
  const redirect = 'http://127.0.0.1:9/cb'
  const client = (await (
    await fetch(`${ORIGIN}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'bench', redirect_uris: [redirect] }),
    })
  ).json()) as { client_id: string }
  for (let i = 0; i < PRINCIPALS; i++) {
    headers.api_key.push({
      authorization: `Bearer ${(await call(ADMIN, 'POST', '/v1/api-keys', { name: `me ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret}`,
    })
    const invite = await call(ADMIN, 'POST', '/v1/members/invitations', { email: `bench${i}@example.com`, role: 'full_editor' })
    const joined = await form('/app/invite', {
      code: invite.acceptUrl.split('#code=')[1],
      name: `Bench ${i}`,
      password: 'bench-password-1',
    })
    const cookie = /^plinth_session=[^;]*/.exec(joined.headers.get('set-cookie') ?? '')![0]
    headers.user.push({ cookie })
    const verifier = randomBytes(32).toString('base64url')
    const authorize = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      scope: 'platform:edit',
      resource: `http://localhost:${PORT}/v1`,
    })
    const consent = await form(
      '/app/oauth/authorize',
      { ...Object.fromEntries(authorize), decision: 'approve', grant_scope: 'platform:edit' },
      cookie,
    )
    const code = new URL(consent.headers.get('location')!).searchParams.get('code')!
    const token = (await (
      await fetch(`${ORIGIN}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          client_id: client.client_id,
          redirect_uri: redirect,
          code_verifier: verifier,
        }),
      })
    ).json()) as { access_token: string }
    headers.oauth.push({ authorization: `Bearer ${token.access_token}` })
    const check = await fetch(`${ORIGIN}/v1/me`, { headers: headers.oauth[i] })
    if (check.status !== 200) throw new Error(`OAuth principal ${i}: ${check.status} ${await check.text()}`)
  }
  const out = {} as Record<'api_key' | 'user' | 'oauth', { rps: number; p50: number; p99: number; non2xx: number }>
  // Two rounds in turn (the order alternates), each principal sending half its share per round.
  for (const round of [0, 1]) {
    const kinds = (round === 0 ? ['api_key', 'user', 'oauth'] : ['oauth', 'user', 'api_key']) as ('api_key' | 'user' | 'oauth')[]
    for (const kind of kinds) {
      let n = 0
      const started = performance.now()
      const result = await autocannon({
        url: ORIGIN + '/v1/me',
        connections: 10,
        amount: (PRINCIPALS * PER_PRINCIPAL) / 2,
        requests: [{ setupRequest: (req: any) => ({ ...req, method: 'GET', path: '/v1/me', headers: headers[kind][n++ % PRINCIPALS] }) }],
      })
      const prior = out[kind]
      // requests.average and duration count whole seconds; a run this short is timed here.
      const row = {
        rps: result.requests.total / ((performance.now() - started) / 1000),
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
      }
      out[kind] =
        prior === undefined
          ? row
          : {
              rps: (prior.rps + row.rps) / 2,
              p50: Math.max(prior.p50, row.p50),
              p99: Math.max(prior.p99, row.p99),
              non2xx: prior.non2xx + row.non2xx,
            }
    }
  }
  return out
}

/** A GET with a Host header (fetch may not set one): the hosting plane's answer status. */
function hostStatus(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: PORT, path: '/', headers: { host: `${host}:${PORT}` } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * An agent's first publish (issue 13): issue a credential, create a 25-file static site, and poll
 * its live host until it answers 200. One network may hold 50 live anonymous sites and issue 60
 * credentials in a burst, so the rounds stay within ITERATIONS (at most 40, and one warm-up).
 */
async function anonymousPublish(): Promise<number[]> {
  const samples: number[] = []
  const files = (round: number) =>
    Array.from({ length: 25 }, (_, i) => ({
      path: i === 0 ? '/index.html' : `/p${i}.html`,
      content: `<!doctype html><title>${round}-${i}</title>${'<p>anonymous bench</p>'.repeat(50)}`,
    }))
  // Round 0 warms the path up and is not counted.
  for (let round = 0; round <= Math.min(ITERATIONS, 40); round++) {
    const t0 = performance.now()
    const { token } = (await (await fetch(`${ORIGIN}/public/v1/anonymous/credentials`, { method: 'POST' })).json()) as { token: string }
    const created = await fetch(`${ORIGIN}/public/v1/anonymous/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Bench ${round}`, kind: 'static', files: files(round) }),
    })
    const site = (await created.json()) as { urls: { published: string } }
    if (created.status !== 201) throw new Error(`anonymous create: ${created.status} ${JSON.stringify(site)}`)
    const host = new URL(site.urls.published).hostname
    while ((await hostStatus(host)) !== 200) await new Promise((r) => setTimeout(r, 1))
    if (round > 0) samples.push(performance.now() - t0)
  }
  return samples
}

const FORM_SITES = 10

/**
 * Form submissions through the hosting plane (issue 14: 1,000 a second with durable writes). Each
 * request comes from its own address (X-Forwarded-For, the server trusting the loopback proxy) and the
 * load is spread over several sites, so the per-address and per-site buckets do not cap the run.
 */
async function formSubmissions(): Promise<autocannon.Result> {
  const hosts: string[] = []
  for (let i = 0; i < FORM_SITES; i++) {
    const site = await call(ADMIN, 'POST', '/v1/websites', { name: `forms ${i}`, kind: 'static', subdomain: `forms-${i}` })
    await call(ADMIN, 'POST', `/v1/websites/${site.id}/deploy/json`, {
      files: [{ path: 'index.html', content: '<form method="post" action="/_platform/forms/contact"></form>' }],
    })
    await call(ADMIN, 'POST', `/v1/websites/${site.id}/publish`)
    hosts.push(`forms-${i}.localhost:${PORT}`)
  }
  let n = 0
  return autocannon({
    url: ORIGIN,
    connections: 10,
    amount: 5000,
    requests: [
      {
        setupRequest: (req: any) => {
          const i = n++
          return {
            ...req,
            method: 'POST',
            path: '/_platform/forms/contact',
            headers: {
              host: hosts[i % hosts.length],
              'content-type': 'application/x-www-form-urlencoded',
              'x-forwarded-for': `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
              accept: 'application/json',
            },
            body: `name=Visitor+${i}&email=v${i}%40example.com&message=Hello+from+the+benchmark`,
          }
        },
      },
    ],
  })
}

/**
 * The CMS at 10,000 items: a collection filled through the API (eight at a time), then listed with a
 * filter on two fields and a sort, 200 times through HTTP.
 */
async function cmsListing(): Promise<{ items: number; createRate: number; samples: number[]; total: number }> {
  const ITEMS = 10_000
  const keys: string[] = []
  for (let i = 0; i < Math.ceil(ITEMS / 110) + 3; i++)
    keys.push(
      (await call(ADMIN, 'POST', '/v1/api-keys', { name: `cms ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret,
    )
  const site = await call(ADMIN, 'POST', '/v1/websites', { name: 'catalogue', kind: 'static', subdomain: 'catalogue' })
  await call(keys[0], 'POST', `/v1/websites/${site.id}/collections`, {
    name: 'Products',
    fields: [
      { name: 'Title', type: 'text', required: true },
      { name: 'Price', type: 'number' },
      { name: 'Category', type: 'select', options: ['lamps', 'chairs', 'tables', 'rugs'] },
      { name: 'Tags', type: 'multi_select', options: ['new', 'sale', 'eco', 'classic'] },
    ],
  })
  let made = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < ITEMS; i += 8) {
        const tags = ['new', 'sale', 'eco', 'classic'].filter((_, t) => (i >> t) % 3 === 0)
        await call(keys[1 + Math.floor(i / 110)], 'POST', `/v1/websites/${site.id}/collections/products/items`, {
          slug: `product-${i}`,
          values: { title: `Product ${i}`, price: (i * 37) % 500, category: ['lamps', 'chairs', 'tables', 'rugs'][i % 4], tags },
          publish: true,
        })
        made++
      }
    }),
  )
  const createRate = made / ((performance.now() - t0) / 1000)
  const filter = encodeURIComponent(JSON.stringify({ price: { gte: 100 }, tags: { contains: 'sale' } }))
  const samples: number[] = []
  let total = 0
  for (let i = 0; i < 200; i++) {
    const t1 = performance.now()
    const page = await call(
      keys[keys.length - 1 - Math.floor(i / 100)],
      'GET',
      `/v1/websites/${site.id}/collections/products/items?filter=${filter}&sort=price:desc&limit=20`,
    )
    samples.push(performance.now() - t1)
    total = page.total
  }
  return { items: ITEMS, createRate, samples, total }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-api-'))
  const child = spawn(
    process.execPath,
    [...(process.env.BENCH_NODE_FLAGS ?? '--no-node-snapshot --max-semi-space-size=32').split(' ').filter(Boolean), ENTRY, 'start'],
    {
      env: {
        PATH: process.env.PATH,
        PORT: String(PORT),
        PLINTH_DATA_DIR: dir,
        PLINTH_ADMIN_KEY: ADMIN,
        PLINTH_TRUSTED_PROXIES: '127.0.0.1,::1',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  )
  try {
    for (let i = 0; ; i++) {
      try {
        await fetch(ORIGIN + '/')
        break
      } catch {
        if (i > 100) throw new Error('plinth did not start')
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    // Expensive-class buckets hold 20 tokens per key: one key per 9 deploy+publish pairs.
    const keys: string[] = []
    for (let i = 0; i < Math.ceil((ITERATIONS * 3) / 18) + 2; i++) {
      keys.push(
        (await call(ADMIN, 'POST', '/v1/api-keys', { name: `bench ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret,
      )
    }
    let nextKey = 0
    let used = 0
    const key = () => {
      if (++used > 18) {
        used = 1
        nextKey++
      }
      return keys[nextKey]
    }
    const site = await call(ADMIN, 'POST', '/v1/websites', { name: 'bench', kind: 'static', subdomain: 'bench' })
    const files = (round: number) =>
      Array.from({ length: 100 }, (_, i) => ({
        path: `pages/p${i}.html`,
        content: `<!doctype html><title>${round}-${i}</title>${'<p>bench content</p>'.repeat(100)}`,
      }))

    const deployPublish: number[] = []
    const publishAlone: number[] = []
    const deployAlone: number[] = []
    for (let round = 0; round < ITERATIONS; round++) {
      const t0 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/deploy/json`, { files: files(round) })
      const t1 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/publish`)
      const t2 = performance.now()
      deployPublish.push(t2 - t0)
      deployAlone.push(t1 - t0)
      // A publish alone: a one-file change committed untimed, then published.
      await call(key(), 'POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: `round ${round}` }] })
      const t3 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/publish`)
      publishAlone.push(performance.now() - t3)
    }

    // A 2,000-file site, listed in pages of 100 through autocannon (10 connections).
    const big = await call(ADMIN, 'POST', '/v1/websites', { name: 'big', kind: 'static', subdomain: 'big' })
    const many = Array.from({ length: 2000 }, (_, i) => ({ path: `docs/${String(i).padStart(4, '0')}.html`, content: `<p>${i}</p>` }))
    await call(keys[keys.length - 1], 'POST', `/v1/websites/${big.id}/deploy/json`, { files: many })
    const listers = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) =>
          (await call(ADMIN, 'POST', '/v1/api-keys', { name: `lister ${i}`, access: { kind: 'organization', role: 'full_editor' } }))
            .secret,
      ),
    )
    let first = ''
    const pages: string[] = []
    for (let cursor: string | null = null; ;) {
      const page: any = await call(listers[0], 'GET', `/v1/websites/${big.id}/source/files?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
      pages.push(`/v1/websites/${big.id}/source/files?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
      first ||= page.items[0].path
      cursor = page.nextCursor
      if (cursor === null) break
    }
    const whole: number[] = []
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now()
      for (const path of pages) await call(listers[1 + (i % 2)], 'GET', path)
      whole.push(performance.now() - t0)
    }
    let n = 0
    const listing = await autocannon({
      url: ORIGIN,
      connections: 10,
      amount: 500,
      requests: [
        {
          setupRequest: (req: any) => {
            const i = n++
            return { ...req, method: 'GET', path: pages[i % pages.length], headers: { authorization: `Bearer ${listers[3 + (i % 5)]}` } }
          },
        },
      ],
    })

    const cms = await cmsListing()
    const me = await authenticationRates()
    const anonymous = await anonymousPublish()
    const forms = await formSubmissions()

    console.log(`\nControl plane latencies (ms), ${ITERATIONS} rounds, one site\n`)
    console.log('| operation | samples | p50 | p99 | max |')
    console.log('|---|---|---|---|---|')
    console.log(row('deploy 100 files (2 KiB each) + publish', deployPublish))
    console.log(row('  of which the deploy', deployAlone))
    console.log(row('publish alone', publishAlone))
    console.log(row('list all 2,000 files (20 pages of 100)', whole))
    console.log(
      `\nautocannon, one page of 100 files, 10 connections, ${listing.requests.total} requests: ${Math.round(listing.requests.average)} req/s, p50 ${listing.latency.p50} ms, p99 ${listing.latency.p99} ms, non-2xx ${listing.non2xx}`,
    )
    console.log(
      `\nGET /v1/me by principal kind (autocannon, 10 connections, ${PRINCIPALS} principals of each kind, ${PER_PRINCIPAL} requests each, interleaved twice)\n`,
    )
    console.log('| principal | req/s | p50 ms | p99 ms (worse round) | non-2xx | vs API key |')
    console.log('|---|---|---|---|---|---|')
    const base = me.api_key.rps
    for (const [kind, r] of Object.entries(me))
      console.log(`| ${kind} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${(r.rps / base).toFixed(2)}x |`)
    console.log(
      `\nForm submissions (autocannon, 10 connections, ${forms.requests.total} urlencoded posts over ${FORM_SITES} static sites, each durable before its answer): ${Math.round(forms.requests.average)} req/s, p50 ${forms.latency.p50} ms, p99 ${forms.latency.p99} ms, non-2xx ${forms.non2xx}`,
    )
    console.log(
      `\nCMS: a collection of ${cms.items.toLocaleString('en')} items (filled through the API at ${Math.round(cms.createRate)} creates/s), listed ${cms.samples.length} times with a filter on two fields and a sort (20 a page): p50 ${percentile(cms.samples, 50).toFixed(1)} ms, p99 ${percentile(cms.samples, 99).toFixed(1)} ms, ${cms.total} matching`,
    )
    console.log(
      `\nAnonymous publish (ms), ${anonymous.length} rounds: a credential issued, a 25-file static site created, until its live host serves it\n`,
    )
    console.log('| operation | samples | p50 | p99 | max |')
    console.log('|---|---|---|---|---|')
    console.log(row('credential + 25-file create + first 200 from the host', anonymous))
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
