import { createHash } from 'node:crypto'
import { ZipFile } from 'yazl'
import { rawPost, rawRequest } from '../../helpers/http.js'
import { waitUntil } from '../../helpers/wait.js'
import { oauthToken } from '../../helpers/oauth.js'
import { addPerson, Browserless } from '../../helpers/people.js'
import type { TestServer } from '../../helpers/server.js'
import type { Zone } from '../../helpers/dns.js'

/*
 * The example of every operation: calls made in order against a fresh server, each with ids and
 * tokens the earlier answers returned. test/http/examples.test.ts runs them and checks each answer
 * against docs/api-examples.json, which /openapi.json and /docs/api show.
 */

/** What a step knows: the server, the answers kept so far (by `keep` name) and what acts made. */
export interface Scene {
  server: TestServer
  dns: Zone
  /** The origin of a loopback web server with one image at /photos/croissant.png (for assets.import). */
  images: string
  [name: string]: any
}

/** One part of a multipart/form-data body: a field, or a file (curl's `-F name=@file`). */
export type FormPart = { name: string; value: string } | { name: string; file: string; content: string | Buffer; contentType?: string }

/** Who calls: the admin API key, nobody, or a bearer token (`shown` in the curl example: an environment variable, or the token itself). */
export type Auth = 'key' | 'none' | { token: string; shown?: string }

export interface Call {
  /** The path parameters (the path comes from the operation table). */
  params?: Record<string, string>
  query?: Record<string, string | number | boolean>
  json?: unknown
  form?: FormPart[]
  /** A body of bytes: `file` is its name in the curl example (`--data-binary @file`). */
  bytes?: { file: string; content: string | Buffer }
  headers?: Record<string, string>
  /** Default: the admin API key. */
  auth?: Auth
}

export interface Step {
  /** The operation called. */
  op: string
  /** Sets the scene only: another step is the operation's example. */
  scene?: true
  call?: (s: Scene) => Call
  status: number
  /** Keeps the answer as `s[keep]` for later steps. */
  keep?: string
  /** Texts of the answer that are random on every run and no pattern of the test knows (what follows their last hyphen). */
  random?: (answer: any) => string[]
}

/** Work between calls that no operation does: a person signing in, a visitor posting a form, DNS records set. */
export interface Act {
  act: (s: Scene) => Promise<void>
}

/** Operations without an example, and why. */
export const SKIPPED: Record<string, string> = {
  'platform.openapi': 'its answer is the OpenAPI document itself',
  'billing.checkout': "needs billing on and Stripe (the tests' Stripe stand-in would answer with its own URLs, not Stripe's)",
  'billing.portal': "needs billing on and Stripe (the tests' Stripe stand-in would answer with its own URLs, not Stripe's)",
  'billing.sync': "needs billing on and Stripe (the tests' Stripe stand-in would answer with its own URLs, not Stripe's)",
  'me.password.change': 'a dashboard session only (its cookie and Origin): keys and applications get 403 session_required',
  'me.email.change': 'a dashboard session only (its cookie and Origin): keys and applications get 403 session_required',
}

const SITE_CSS = 'body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 40rem }\nh1 { color: #8a4b08 }\n'
const INDEX_HTML = `<!doctype html>
<html lang="en">
  <head><title>Bakery</title><link rel="stylesheet" href="/style.css" /></head>
  <body>
    <h1>Fresh bread every morning</h1>
    <form method="post" action="/_platform/forms/contact">
      <input name="email" type="email" /> <textarea name="message"></textarea> <button>Send</button>
    </form>
  </body>
</html>
`
const HOME_PAGE = `import { definePage } from '@platform'
import { Hero } from '@components/Hero'

export default definePage({
  route: '/',
  metadata: { title: 'Portfolio' },
  render: () => <Hero title="Hello, I design gardens" />,
})
`
const HERO = `export function Hero({ title }: { title: string }) {
  return <h1 className="text-4xl font-bold">{title}</h1>
}
`

/** A large file of a ticket deploy (over 1 MiB: sent apart from the folder, by its SHA-256). */
const CLIP = Buffer.alloc(1_200_000, 7)
/** A file of a ticket deploy over 100 MiB goes in 100 MiB parts: its last part is one byte. */
const PART = 100 * 1024 * 1024
const LAST_PART = Buffer.from('!')
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex')
/** The SHA-256 of the first part, 100 MiB of zeros (never sent: the example sends the last part). */
const ZEROS_SHA256 = '20492a4d0d84f8beb1767f6616229f85d44c2827b64bdbfb260ee12fa1109e0e'
const PARTS = [ZEROS_SHA256, sha256(LAST_PART)]
const PARTED = {
  path: '/media/film.mov',
  size: PART + LAST_PART.length,
  sha256: createHash('sha256')
    .update(Buffer.concat(PARTS.map((d) => Buffer.from(d, 'hex'))))
    .digest('hex'),
  partSha256: PARTS,
}

/** A 48x32 PNG (a warm brown rectangle). */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAADAAAAAgCAIAAADbtmxLAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAASUlEQVRYhe2WwQkAQAzC+nQ3N8vUN0aPEugAIho7NF/drCtAQdGhmiFsWdbxg2CMDtUMYcuyDiF80KJDNUPYssihCMY6HRwe1we+ii5MD1D7DgAAAABJRU5ErkJggg==',
  'base64',
)

/** A zip of text files, dated on the test clock's day (so its bytes are the same on every run). */
function zipOf(files: Record<string, string>): Promise<Buffer> {
  const zip = new ZipFile()
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name, { mtime: new Date(Date.UTC(2026, 0, 1)) })
  zip.end()
  const chunks: Buffer[] = []
  return new Promise((resolve) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c))
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)))
  })
}

const BROWSER = {
  'user-agent': 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
}

const site = (s: Scene) => ({ websiteId: s.bakery.id as string })

/** The function of the examples' functions site: the opening hours from its variables, counted in its KV. */
const HOURS_FUNCTION = `interface Env {
  KV: KVNamespace
  OPENING_HOURS?: string
}

export const onRequestGet: PagesFunction<Env> = async ({ env }) => {
  const asked = Number((await env.KV.get('asked')) ?? 0) + 1
  await env.KV.put('asked', String(asked))
  console.log('opening hours asked', asked, 'times')
  return Response.json({ hours: env.OPENING_HOURS, asked })
}
`
const lease = (s: Scene) => s.lease.leaseToken as string
const anon = (s: Scene): Auth => ({ token: s.credential.token, shown: '$ANON_TOKEN' })
/** The anonymous token of the second site (shared files): the same variable in the curl examples. */
const dropper = (s: Scene): Auth => ({ token: s.dropCredential.token, shown: '$ANON_TOKEN' })
const person = (s: Scene): Auth => ({ token: s.oauth, shown: '$TOKEN' })
/** An anonymous site's label: its name and a random suffix. */
const label = (answer: { urls: { published: string } }) => [new URL(answer.urls.published).hostname.split('.')[0]!]
/** The shared folder the first begin made. */
const folder = (s: Scene) => s.shared.folder as string

export const STEPS: (Step | Act)[] = [
  // The caller and the platform.
  { op: 'me.get', status: 200 },
  { op: 'platform.describe', status: 200, call: () => ({ auth: 'none' }) },
  { op: 'platform.packages', status: 200 },
  { op: 'platform.publicPackages', status: 200, call: () => ({ auth: 'none' }) },

  // A static website: create, deploy, read, publish, roll back.
  {
    op: 'websites.create',
    status: 201,
    keep: 'bakery',
    call: () => ({ json: { name: 'Bakery', kind: 'static', subdomain: 'bakery', description: 'Bread and cakes' } }),
  },
  { op: 'websites.get', status: 200, call: (s) => ({ params: site(s) }) },
  {
    op: 'websites.update',
    status: 200,
    call: (s) => ({ params: site(s), json: { name: 'Corner Bakery', description: 'Bread and cakes, baked daily' } }),
  },
  {
    op: 'source.deploy',
    status: 201,
    call: (s) => ({
      params: site(s),
      json: {
        files: [
          { path: 'index.html', content: INDEX_HTML },
          { path: 'style.css', content: SITE_CSS },
        ],
        message: 'First version',
      },
    }),
  },
  {
    op: 'source.deployMultipart',
    status: 201,
    call: (s) => ({
      params: site(s),
      form: [
        { name: 'files', file: 'about.html', content: '<h1>About us</h1>\n<p>Three generations of bakers.</p>\n' },
        { name: 'files', file: 'logo.png', content: PNG },
        { name: 'message', value: 'About page and logo' },
      ],
    }),
  },
  { op: 'source.summary', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'source.listFiles', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'source.readFile', status: 200, call: (s) => ({ params: site(s), query: { path: 'style.css' } }) },
  { op: 'source.readFiles', status: 200, call: (s) => ({ params: site(s), json: { paths: ['about.html', 'logo.png', 'menu.html'] } }) },
  { op: 'source.changes', status: 200, call: (s) => ({ params: site(s), query: { from: 2, to: 3 } }) },
  { op: 'deployments.ensure', status: 200, call: (s) => ({ params: site(s), json: { target: 'head' } }) },
  { op: 'publishing.publish', status: 200, call: (s) => ({ params: site(s) }) },
  {
    op: 'websites.emailLink',
    status: 200,
    call: (s) => ({
      params: site(s),
      json: { to: ['ann@example.com', 'bo@example.org'], link: 'published', message: 'The new menu is online.' },
    }),
  },
  { op: 'deployments.status', status: 200, call: (s) => ({ params: site(s), query: { target: 'published' } }) },
  { op: 'publishing.rebuild', status: 200, call: (s) => ({ params: site(s), json: { target: 'published' } }) },
  {
    op: 'source.deleteFiles',
    status: 200,
    call: (s) => ({ params: site(s), json: { paths: ['about.html'], message: 'No about page for now' } }),
  },
  { op: 'source.restoreHead', status: 200, call: (s) => ({ params: site(s), json: { to: 'published' } }) },
  { op: 'publishing.rollback', status: 200, call: (s) => ({ params: site(s), json: { version: 2 } }) },
  { op: 'source.listVersions', status: 200, call: (s) => ({ params: site(s), query: { limit: 3 } }) },
  { op: 'publishing.unpublish', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'publishing.publish', scene: true, status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'websites.activate', status: 200, call: (s) => ({ params: site(s) }) },

  // A folder deployed with a ticket, its large files sent first.
  { op: 'source.beginDeploy', status: 201, keep: 'ticket', call: (s) => ({ params: site(s) }) },
  {
    op: 'source.ticketUploads',
    status: 200,
    keep: 'large',
    call: (s) => ({
      auth: { token: s.ticket.ticket },
      json: { files: [{ path: '/media/clip.mp4', size: CLIP.length, sha256: sha256(CLIP) }, PARTED] },
    }),
  },
  {
    op: 'source.ticketUploadBytes',
    status: 200,
    call: (s) => ({
      params: { websiteId: s.bakery.id, objectId: sha256(CLIP) },
      auth: 'none',
      headers: s.large.files[0].upload.headers,
      bytes: { file: 'media/clip.mp4', content: CLIP },
    }),
  },
  {
    op: 'source.ticketUploadPart',
    status: 200,
    call: (s) => ({
      params: { websiteId: s.bakery.id, objectId: PARTED.sha256, partNumber: '2' },
      auth: 'none',
      headers: s.large.files[1].parts[1].headers,
      bytes: { file: 'film.mov.part2', content: LAST_PART },
    }),
  },
  {
    op: 'source.ticketDeploy',
    status: 201,
    call: (s) => ({
      auth: { token: s.large.ticket },
      form: [
        { name: 'files', file: 'index.html', content: INDEX_HTML.replace('every morning', 'every morning, and a video') },
        { name: 'files', file: 'style.css', content: SITE_CSS },
        { name: 'uploaded', value: JSON.stringify([{ path: '/media/clip.mp4', size: CLIP.length, sha256: sha256(CLIP) }]) },
        { name: 'message', value: 'Deployed from my laptop' },
      ],
    }),
  },
  { op: 'publishing.publish', scene: true, status: 200, call: (s) => ({ params: site(s) }) },

  // Visitors: page views, and a message through the site's form.
  {
    act: async (s) => {
      const port = s.server.plinth.port
      for (const path of ['/', '/']) await rawRequest(port, 'bakery.localhost', path, BROWSER)
      const form = new URLSearchParams({ email: 'ada@example.com', message: 'Do you bake rye on Sundays?' }).toString()
      await rawPost(port, 'bakery.localhost', '/_platform/forms/contact', form, { 'content-type': 'application/x-www-form-urlencoded' })
    },
  },
  { op: 'forms.list', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'forms.listSubmissions', status: 200, keep: 'submissions', call: (s) => ({ params: { ...site(s), form: 'contact' } }) },
  {
    op: 'forms.getSubmission',
    status: 200,
    call: (s) => ({ params: { ...site(s), form: 'contact', submissionId: s.submissions.items[0].id } }),
  },
  {
    op: 'forms.updateSubmission',
    status: 200,
    call: (s) => ({ params: { ...site(s), form: 'contact', submissionId: s.submissions.items[0].id }, json: { read: true } }),
  },
  {
    op: 'forms.deleteSubmission',
    status: 200,
    call: (s) => ({ params: { ...site(s), form: 'contact', submissionId: s.submissions.items[0].id } }),
  },
  {
    op: 'forms.setNotifications',
    status: 200,
    call: (s) => ({ params: { ...site(s), form: 'contact' }, json: { recipients: ['orders@example.com'] } }),
  },
  { op: 'forms.getNotifications', status: 200, call: (s) => ({ params: { ...site(s), form: 'contact' } }) },
  { op: 'forms.rotateWebhookSecret', status: 200, call: (s) => ({ params: site(s) }) },

  // Analytics.
  { op: 'analytics.get', status: 200, call: (s) => ({ params: site(s), query: { period: '24h' } }) },
  {
    op: 'analytics.query',
    status: 200,
    call: (s) => ({ params: site(s), query: { startAt: Date.UTC(2026, 0, 1), endAt: Date.UTC(2026, 0, 2), dimension: 'path' } }),
  },
  {
    op: 'analytics.timeseries',
    status: 200,
    call: (s) => ({ params: site(s), query: { startAt: Date.UTC(2026, 0, 1), endAt: Date.UTC(2026, 0, 1, 6), unit: 'hour' } }),
  },
  { op: 'analytics.realtime', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'analytics.share', status: 201, call: (s) => ({ params: site(s) }) },
  { op: 'analytics.unshare', status: 200, call: (s) => ({ params: site(s) }) },

  // Custom domains, verified through DNS.
  { op: 'domains.add', status: 201, keep: 'domain', call: (s) => ({ params: site(s), json: { hostname: 'www.cornerbakery.example' } }) },
  {
    act: async (s) => {
      for (const record of s.domain.dnsRecords as { type: string; name: string; value: string }[]) {
        const entry = (s.dns[record.name.toLowerCase().replace(/\.$/, '')] ??= {})
        if (record.type === 'TXT') entry.TXT = [record.value]
        if (record.type === 'CNAME') entry.CNAME = record.value
      }
    },
  },
  { op: 'domains.verify', status: 200, call: (s) => ({ params: { ...site(s), domainId: s.domain.id } }) },
  {
    op: 'domains.setPrimary',
    status: 200,
    call: (s) => ({ params: { ...site(s), domainId: s.domain.id }, json: { redirectPlatform: true } }),
  },
  { op: 'domains.get', status: 200, call: (s) => ({ params: { ...site(s), domainId: s.domain.id } }) },
  { op: 'domains.list', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'domains.listAll', status: 200 },
  { op: 'domains.connect', status: 200, call: (s) => ({ params: { ...site(s), domainId: s.domain.id } }) },
  { op: 'domains.remove', status: 200, call: (s) => ({ params: { ...site(s), domainId: s.domain.id } }) },

  // A namespace: each published site also answers at {label}.{namespace}.{site domain}.
  { op: 'namespaces.check', status: 200, call: () => ({ query: { name: 'cornerbakery' } }) },
  { op: 'namespaces.rename', status: 200, call: () => ({ json: { name: 'cornerbakery' } }) },
  { op: 'namespaces.get', status: 200 },
  { op: 'namespaces.renameVanity', status: 200, call: (s) => ({ params: site(s), json: { label: 'bakery' } }) },

  // Assets: uploaded in one request or in two steps, imported, resized.
  {
    op: 'assets.upload',
    status: 201,
    keep: 'asset',
    call: (s) => ({
      params: site(s),
      form: [
        { name: 'file', file: 'loaf.png', content: PNG, contentType: 'image/png' },
        { name: 'altText', value: 'A sourdough loaf' },
      ],
    }),
  },
  {
    op: 'assets.beginUpload',
    status: 201,
    keep: 'pending',
    call: (s) => ({ params: site(s), json: { filename: 'menu.png', contentType: 'image/png', bytes: PNG.length, altText: 'Our menu' } }),
  },
  {
    op: 'assets.putBytes',
    status: 200,
    call: (s) => ({
      params: { ...site(s), assetId: s.pending.asset.id },
      headers: s.pending.upload.headers,
      bytes: { file: 'menu.png', content: PNG },
    }),
  },
  { op: 'assets.finalize', status: 200, call: (s) => ({ params: { ...site(s), assetId: s.pending.asset.id } }) },
  {
    op: 'assets.import',
    status: 200,
    call: (s) => ({ params: site(s), json: { urls: [`${s.images}/photos/croissant.png`], altText: 'A croissant' } }),
  },
  { op: 'assets.get', status: 200, call: (s) => ({ params: { ...site(s), assetId: s.asset.id } }) },
  {
    op: 'assets.update',
    status: 200,
    call: (s) => ({ params: { ...site(s), assetId: s.asset.id }, json: { altText: 'A sourdough loaf, sliced' } }),
  },
  {
    op: 'assets.variants',
    status: 200,
    call: (s) => ({ params: { ...site(s), assetId: s.asset.id }, json: { widths: [16, 32], format: 'webp' } }),
  },
  { op: 'assets.list', status: 200, call: (s) => ({ params: site(s), query: { kind: 'image', limit: 2 } }) },
  { op: 'assets.delete', status: 200, call: (s) => ({ params: { ...site(s), assetId: s.pending.asset.id } }) },

  // The CMS, legacy pages and the blog (deprecated, kept working).
  {
    op: 'cms.collections.create',
    status: 201,
    keep: 'collection',
    call: (s) => ({
      params: site(s),
      json: {
        name: 'Cakes',
        fields: [
          { name: 'Name', type: 'text', required: true },
          { name: 'Price', type: 'number' },
        ],
      },
    }),
  },
  { op: 'cms.collections.list', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'cms.collections.get', status: 200, call: (s) => ({ params: { ...site(s), colId: 'cakes' } }) },
  {
    op: 'cms.collections.update',
    status: 200,
    call: (s) => ({ params: { ...site(s), colId: 'cakes' }, json: { name: 'Cakes and tarts' } }),
  },
  {
    op: 'cms.fields.add',
    status: 201,
    keep: 'field',
    call: (s) => ({ params: { ...site(s), colId: 'cakes' }, json: { name: 'Vegan', type: 'boolean' } }),
  },
  { op: 'cms.fields.update', status: 200, call: (s) => ({ params: { ...site(s), fieldId: s.field.id }, json: { name: 'Plant-based' } }) },
  {
    op: 'cms.items.create',
    status: 201,
    keep: 'item',
    call: (s) => ({ params: { ...site(s), colId: 'cakes' }, json: { values: { name: 'Lemon tart', price: 4.5 }, publish: true } }),
  },
  { op: 'cms.items.list', status: 200, call: (s) => ({ params: { ...site(s), colId: 'cakes' }, query: { sort: 'price:desc' } }) },
  { op: 'cms.items.find', status: 200, call: (s) => ({ params: site(s), query: { collection: 'cakes', slug: s.item.slug } }) },
  { op: 'cms.items.get', status: 200, call: (s) => ({ params: { ...site(s), itemId: s.item.id } }) },
  { op: 'cms.items.update', status: 200, call: (s) => ({ params: { ...site(s), itemId: s.item.id }, json: { values: { price: 5 } } }) },
  {
    op: 'cms.items.setPublished',
    status: 200,
    call: (s) => ({ params: { ...site(s), itemId: s.item.id }, json: { action: 'schedule', publishAt: '2026-02-01T08:00:00.000Z' } }),
  },
  { op: 'cms.items.backreferences', status: 200, call: (s) => ({ params: { ...site(s), itemId: s.item.id } }) },
  { op: 'cms.items.delete', status: 200, call: (s) => ({ params: { ...site(s), itemId: s.item.id } }) },
  { op: 'cms.items.restore', status: 200, call: (s) => ({ params: { ...site(s), itemId: s.item.id } }) },
  { op: 'cms.schema', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'cms.fields.delete', status: 200, call: (s) => ({ params: { ...site(s), fieldId: s.field.id } }) },
  { op: 'cms.collections.delete', status: 200, call: (s) => ({ params: { ...site(s), colId: 'cakes' } }) },
  {
    op: 'pages.create',
    status: 201,
    call: (s) => ({ params: site(s), json: { title: 'Opening hours', content: 'Monday to Saturday, 7 to 18.', format: 'markdown' } }),
  },
  { op: 'pages.list', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'pages.get', status: 200, call: (s) => ({ params: { ...site(s), pageId: 'opening-hours' } }) },
  {
    op: 'pages.update',
    status: 200,
    call: (s) => ({ params: { ...site(s), pageId: 'opening-hours' }, json: { content: 'Monday to Sunday, 7 to 18.' } }),
  },
  { op: 'pages.delete', status: 200, call: (s) => ({ params: { ...site(s), pageId: 'opening-hours' } }) },
  {
    op: 'blog.posts.create',
    status: 201,
    keep: 'post',
    call: (s) => ({
      params: site(s),
      json: { title: 'Our new rye', body: 'Baked with **whole grain** from the mill next door.', date: '2026-01-01', tags: ['bread'] },
    }),
  },
  { op: 'blog.get', status: 200, call: (s) => ({ params: site(s) }) },
  { op: 'blog.posts.list', status: 200, call: (s) => ({ params: site(s) }) },
  {
    op: 'blog.posts.update',
    status: 200,
    call: (s) => ({ params: { ...site(s), postId: 'our-new-rye' }, json: { excerpt: 'A darker loaf for winter.' } }),
  },

  // Functions: a static site with a functions/ folder, the variables it reads, what it logged.
  {
    op: 'websites.create',
    scene: true,
    status: 201,
    keep: 'api',
    call: () => ({ json: { name: 'Bakery API', kind: 'static', subdomain: 'bakery-api' } }),
  },
  {
    op: 'source.deploy',
    scene: true,
    status: 201,
    call: (s) => ({ params: { websiteId: s.api.id }, json: { files: [{ path: 'functions/api/hours.ts', content: HOURS_FUNCTION }] } }),
  },
  {
    op: 'functions.setVariable',
    status: 200,
    call: (s) => ({ params: { websiteId: s.api.id, name: 'OPENING_HOURS' }, json: { value: '07:00-18:00' } }),
  },
  {
    op: 'functions.setVariable',
    scene: true,
    status: 200,
    call: (s) => ({ params: { websiteId: s.api.id, name: 'WEATHER_API_KEY' }, json: { value: 'wk_example_not_shown', secret: true } }),
  },
  {
    act: async (s) => {
      await rawRequest(s.server.plinth.port, 'draft--bakery-api.localhost', '/api/hours')
      // The request's line is written once its function finished, a moment after the answer ended.
      await waitUntil(
        () => s.server.plinth.registry.functions.logs.list(s.api.id).some((l) => l.type === 'invocation'),
        'the invocation line',
      )
    },
  },
  { op: 'functions.get', status: 200, call: (s) => ({ params: { websiteId: s.api.id } }) },
  { op: 'functions.logs', status: 200, call: (s) => ({ params: { websiteId: s.api.id }, query: { limit: 10 } }) },
  { op: 'functions.removeVariable', status: 200, call: (s) => ({ params: { websiteId: s.api.id, name: 'OPENING_HOURS' } }) },

  // A framework website: typed source edited under a lease.
  {
    op: 'websites.create',
    scene: true,
    status: 201,
    keep: 'portfolio',
    call: () => ({ json: { name: 'Portfolio', subdomain: 'portfolio' } }),
  },
  { op: 'code.acquireLease', status: 200, keep: 'lease', call: (s) => ({ params: { websiteId: s.portfolio.id } }) },
  {
    op: 'code.putFile',
    status: 201,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: { leaseToken: lease(s), file: { type: 'component', name: 'Hero' }, content: HERO, message: 'The hero' },
    }),
  },
  {
    op: 'code.putFile',
    scene: true,
    status: 201,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: { leaseToken: lease(s), file: { type: 'page', name: 'index' }, content: HOME_PAGE },
    }),
  },
  {
    op: 'code.putFile',
    scene: true,
    status: 201,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: { leaseToken: lease(s), file: { type: 'module', name: 'draft' }, content: 'export const draft = true\n' },
    }),
  },
  { op: 'code.listFiles', status: 200, call: (s) => ({ params: { websiteId: s.portfolio.id }, query: { lines: true } }) },
  { op: 'code.readFile', status: 200, call: (s) => ({ params: { websiteId: s.portfolio.id }, query: { type: 'page', name: 'index' } }) },
  {
    op: 'code.readFiles',
    status: 200,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: { files: [{ type: 'component', name: 'Hero' }, { type: 'global_css' }] },
    }),
  },
  {
    op: 'code.strReplace',
    status: 201,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: {
        leaseToken: lease(s),
        files: [{ file: { type: 'page', name: 'index' }, edits: [{ oldStr: 'I design gardens', newStr: 'I design small gardens' }] }],
      },
    }),
  },
  {
    op: 'code.setPageRoute',
    status: 201,
    call: (s) => ({ params: { websiteId: s.portfolio.id }, json: { leaseToken: lease(s), page: 'index', route: '/home' } }),
  },
  {
    op: 'code.setMetadata',
    status: 201,
    call: (s) => ({
      params: { websiteId: s.portfolio.id },
      json: { leaseToken: lease(s), metadata: { title: 'Garden design', description: 'Small gardens, designed to last', language: 'en' } },
    }),
  },
  { op: 'code.search', status: 200, call: (s) => ({ params: { websiteId: s.portfolio.id }, json: { pattern: 'Hero', contextLines: 1 } }) },
  {
    op: 'code.diffFile',
    status: 200,
    call: (s) => ({ params: { websiteId: s.portfolio.id }, query: { type: 'page', name: 'index', from: 3, to: 5 } }),
  },
  {
    op: 'code.deleteFile',
    status: 200,
    call: (s) => ({ params: { websiteId: s.portfolio.id }, json: { leaseToken: lease(s), file: { type: 'module', name: 'draft' } } }),
  },
  { op: 'code.check', status: 200, call: (s) => ({ params: { websiteId: s.portfolio.id } }) },

  // Shared files: a storage website's folders and files.
  {
    op: 'websites.create',
    scene: true,
    status: 201,
    keep: 'files',
    call: () => ({ json: { name: 'Shared files', kind: 'storage', subdomain: 'files' } }),
  },
  {
    op: 'storage.beginUploads',
    status: 201,
    keep: 'shared',
    call: (s) => ({
      params: { websiteId: s.files.id },
      json: {
        folder: 'Recipes',
        files: [
          { name: 'rye.txt', byteSize: 37 },
          { name: 'notes/starter.txt', byteSize: 26 },
        ],
      },
    }),
  },
  {
    op: 'storage.uploadBytes',
    status: 200,
    call: (s) => ({
      params: { websiteId: s.files.id, objectId: s.shared.files[0].id },
      auth: 'none',
      headers: s.shared.files[0].upload.headers,
      bytes: { file: 'rye.txt', content: 'Rye flour, water, salt, and patience.' },
    }),
  },
  {
    op: 'storage.uploadBytes',
    scene: true,
    status: 200,
    call: (s) => ({
      params: { websiteId: s.files.id, objectId: s.shared.files[1].id },
      auth: 'none',
      headers: { ...s.shared.files[1].upload.headers, 'content-range': 'bytes 0-9/26' },
      bytes: { file: 'starter.txt', content: 'Feed it da' },
    }),
  },
  { op: 'storage.resumeUpload', status: 200, call: (s) => ({ params: { websiteId: s.files.id, objectId: s.shared.files[1].id } }) },
  {
    op: 'storage.uploadBytes',
    scene: true,
    status: 200,
    call: (s) => ({
      params: { websiteId: s.files.id, objectId: s.shared.files[1].id },
      auth: 'none',
      headers: { ...s.shared.files[1].upload.headers, 'content-range': 'bytes 10-25/26' },
      bytes: { file: 'starter.txt', content: 'ily, keep warm.' + '\n' },
    }),
  },
  {
    op: 'storage.finalize',
    status: 200,
    keep: 'finalized',
    call: (s) => ({ params: { websiteId: s.files.id }, json: { ids: s.shared.files.map((f: { id: string }) => f.id) } }),
  },
  { op: 'storage.list', status: 200, call: (s) => ({ params: { websiteId: s.files.id }, query: { folder: folder(s) } }) },
  {
    op: 'storage.update',
    status: 200,
    call: (s) => ({ params: { websiteId: s.files.id, objectId: s.finalized.files[0].objectId }, json: { name: 'Rye bread.txt' } }),
  },
  {
    op: 'storage.move',
    status: 200,
    call: (s) => ({ params: { websiteId: s.files.id, objectId: s.finalized.files[1].objectId }, json: { folder: folder(s) } }),
  },
  {
    op: 'storage.labelFolder',
    status: 200,
    call: (s) => ({ params: { websiteId: s.files.id, folder: folder(s) }, json: { label: 'Family recipes' } }),
  },
  {
    op: 'storage.setFolderPassword',
    status: 200,
    call: (s) => ({ params: { websiteId: s.files.id, folder: folder(s) }, json: { password: 'sourdough-2026' } }),
  },
  {
    op: 'storage.renameFolder',
    status: 200,
    keep: 'renamed',
    call: (s) => ({ params: { websiteId: s.files.id, folder: folder(s) }, json: { to: 'recipes-2026' } }),
  },
  {
    act: async (s) => {
      s.zipBytes = await zipOf({ 'spring.txt': 'Rhubarb tart, asparagus quiche\n', 'summer.txt': 'Strawberry shortcake\n' })
    },
  },
  {
    op: 'storage.beginUploads',
    scene: true,
    status: 201,
    keep: 'zip',
    call: (s) => ({
      params: { websiteId: s.files.id },
      json: { folder: 'Menus', files: [{ name: 'menu-cards.zip', byteSize: s.zipBytes.length, archive: true }] },
    }),
  },
  {
    op: 'storage.uploadBytes',
    scene: true,
    status: 200,
    call: (s) => ({
      params: { websiteId: s.files.id, objectId: s.zip.files[0].id },
      auth: 'none',
      headers: s.zip.files[0].upload.headers,
      bytes: { file: 'menu-cards.zip', content: s.zipBytes },
    }),
  },
  {
    op: 'storage.finalize',
    scene: true,
    status: 200,
    keep: 'zipped',
    call: (s) => ({ params: { websiteId: s.files.id }, json: { ids: [s.zip.files[0].id] } }),
  },
  { op: 'storage.entries', status: 200, call: (s) => ({ params: { websiteId: s.files.id, objectId: s.zipped.files[0].objectId } }) },
  {
    op: 'storage.beginUploads',
    scene: true,
    status: 201,
    keep: 'huge',
    call: (s) => ({
      params: { websiteId: s.files.id },
      json: { folder: 'Video', files: [{ name: 'bakery-tour.mov', byteSize: PART + 1 }] },
    }),
  },
  {
    op: 'storage.uploadPart',
    status: 200,
    call: (s) => ({
      params: { websiteId: s.files.id, objectId: s.huge.files[0].id, partNumber: '2' },
      auth: 'none',
      headers: s.huge.files[0].parts[1].headers,
      bytes: { file: 'bakery-tour.mov.part2', content: LAST_PART },
    }),
  },
  { op: 'storage.uploads', status: 200 },
  { op: 'storage.abortUpload', status: 200, call: (s) => ({ query: { uploadId: s.huge.files[0].id } }) },
  { op: 'storage.clearUploads', status: 200 },
  { op: 'storage.delete', status: 200, call: (s) => ({ params: { websiteId: s.files.id, objectId: s.finalized.files[0].objectId } }) },
  { op: 'storage.deleteFolder', status: 200, call: (s) => ({ params: { websiteId: s.files.id, folder: 'recipes-2026' } }) },

  // Keys, the audit log, billing and feedback.
  {
    op: 'apiKeys.create',
    status: 201,
    keep: 'key',
    call: (s) => ({
      json: {
        name: 'Deploy bot',
        access: { kind: 'websites', role: 'full_editor', websiteIds: [s.bakery.id] },
        expiresAt: '2026-07-01T00:00:00.000Z',
      },
    }),
  },
  { op: 'apiKeys.get', status: 200, call: (s) => ({ params: { keyId: s.key.id } }) },
  { op: 'apiKeys.update', status: 200, call: (s) => ({ params: { keyId: s.key.id }, json: { name: 'Deploy bot (CI)' } }) },
  { op: 'apiKeys.rotate', status: 200, call: (s) => ({ params: { keyId: s.key.id } }) },
  { op: 'apiKeys.list', status: 200, call: () => ({ query: { limit: 2 } }) },
  { op: 'apiKeys.revoke', status: 200, call: (s) => ({ params: { keyId: s.key.id } }) },
  { op: 'auditLog.list', status: 200, call: (s) => ({ query: { websiteId: s.bakery.id, limit: 3 } }) },
  { op: 'billing.get', status: 200 },
  {
    op: 'feedback.create',
    status: 201,
    call: (s) => ({ json: { message: 'The deploy ticket flow is great.', context: { websiteId: s.bakery.id } } }),
  },

  // People: members and collaborators (they accept in the dashboard).
  {
    op: 'members.invitations.create',
    status: 201,
    keep: 'invitation',
    call: () => ({ json: { email: 'mia@example.com', role: 'full_editor' } }),
  },
  { op: 'members.invitations.list', status: 200 },
  { op: 'members.invitations.resend', status: 200, keep: 'invitation', call: (s) => ({ params: { invitationId: s.invitation.id } }) },
  {
    op: 'members.invitations.create',
    scene: true,
    status: 201,
    keep: 'withdrawn',
    call: () => ({ json: { email: 'zed@example.com', role: 'content_editor' } }),
  },
  { op: 'members.invitations.revoke', status: 200, call: (s) => ({ params: { invitationId: s.withdrawn.id } }) },
  {
    act: async (s) => {
      s.mia = await addPerson(s.server, 'mia@example.com', 'mia-password-1', 'Mia')
      const accepted = await (s.mia as Browserless).post('/app/invite', { code: s.invitation.acceptUrl.split('#code=')[1] })
      if (accepted.status !== 303) throw new Error(`Mia could not accept: ${accepted.status}`)
    },
  },
  { op: 'members.list', status: 200, keep: 'members' },
  {
    op: 'members.update',
    status: 200,
    call: (s) => ({
      params: { userId: s.members.items.find((m: { email: string }) => m.email === 'mia@example.com').userId },
      json: { role: 'admin' },
    }),
  },
  {
    op: 'members.remove',
    status: 200,
    call: (s) => ({ params: { userId: s.members.items.find((m: { email: string }) => m.email === 'mia@example.com').userId } }),
  },
  {
    op: 'collaborators.invitations.create',
    status: 201,
    keep: 'cora',
    call: (s) => ({ params: site(s), json: { email: 'cora@example.com', role: 'content_editor' } }),
  },
  { op: 'collaborators.invitations.list', status: 200, call: (s) => ({ params: site(s) }) },
  {
    op: 'collaborators.invitations.resend',
    status: 200,
    keep: 'cora',
    call: (s) => ({ params: { ...site(s), invitationId: s.cora.id } }),
  },
  {
    op: 'collaborators.invitations.create',
    scene: true,
    status: 201,
    keep: 'noah',
    call: (s) => ({ params: site(s), json: { email: 'noah@example.com', role: 'full_editor' } }),
  },
  { op: 'collaborators.invitations.revoke', status: 200, call: (s) => ({ params: { ...site(s), invitationId: s.noah.id } }) },
  {
    act: async (s) => {
      const cora = await addPerson(s.server, 'cora@example.com', 'cora-password-1', 'Cora')
      const accepted = await cora.post('/app/invite', { code: s.cora.acceptUrl.split('#code=')[1] })
      if (accepted.status !== 303) throw new Error(`Cora could not accept: ${accepted.status}`)
    },
  },
  { op: 'collaborators.list', status: 200, keep: 'collaborators', call: (s) => ({ params: site(s) }) },
  { op: 'collaborators.remove', status: 200, call: (s) => ({ params: { ...site(s), userId: s.collaborators.items[0].userId } }) },

  // A person signed in through an application (OAuth): claims, connections.
  {
    act: async (s) => {
      s.ada = await addPerson(s.server, 'ada@example.com', 'ada-password-1', 'Ada')
      s.oauth = await oauthToken(s.server, s.ada, '/v1')
    },
  },
  { op: 'me.connections.list', status: 200, keep: 'connections', call: (s) => ({ auth: person(s) }) },
  { op: 'me.update', status: 200, call: (s) => ({ auth: person(s), json: { name: 'Ada Lovelace' } }) },
  {
    // Ada signs in on a second device too; that session (the one its own list calls current) is signed out below.
    act: async (s) => {
      const laptop = new Browserless(s.server)
      await laptop.signIn('ada@example.com', 'ada-password-1')
      const own = await laptop.api('GET', '/v1/me/sessions')
      s.adaLaptop = own.body.items.find((i: { current: boolean }) => i.current).id
    },
  },
  { op: 'me.sessions.list', status: 200, call: (s) => ({ auth: person(s) }) },
  { op: 'me.sessions.end', status: 200, call: (s) => ({ auth: person(s), params: { sessionId: s.adaLaptop } }) },

  // Anonymous publishing: a site without an account, claimed later.
  { op: 'anonymous.createCredential', status: 201, keep: 'credential', call: () => ({ auth: 'none' }) },
  {
    op: 'anonymous.createSite',
    status: 201,
    keep: 'anonSite',
    random: label,
    call: (s) => ({
      auth: anon(s),
      json: { name: 'Party invite', kind: 'static', files: [{ path: 'index.html', content: '<h1>Saturday at eight!</h1>' }] },
    }),
  },
  { op: 'anonymous.getSite', status: 200, call: (s) => ({ auth: anon(s), params: { id: s.anonSite.id } }) },
  {
    op: 'anonymous.updateSite',
    status: 200,
    call: (s) => ({
      auth: anon(s),
      params: { id: s.anonSite.id },
      json: { expectedHeadVersion: s.anonSite.headVersion, files: [{ path: 'index.html', content: '<h1>Saturday at nine!</h1>' }] },
    }),
  },
  { op: 'anonymous.createCredential', scene: true, status: 201, keep: 'dropCredential', call: () => ({ auth: 'none' }) },
  {
    op: 'anonymous.createSite',
    scene: true,
    status: 201,
    keep: 'drop',
    random: label,
    call: (s) => ({ auth: dropper(s), json: { name: 'Slides', kind: 'storage' } }),
  },
  {
    op: 'anonymous.beginUploads',
    status: 201,
    keep: 'dropUploads',
    call: (s) => ({
      auth: dropper(s),
      params: { id: s.drop.id },
      json: {
        folder: 'Talk',
        files: [
          { name: 'slides.txt', byteSize: 20 },
          { name: 'notes.txt', byteSize: 5 },
        ],
      },
    }),
  },
  {
    op: 'anonymous.uploadBytes',
    status: 200,
    call: (s) => ({
      auth: dropper(s),
      params: { id: s.drop.id, objectId: s.dropUploads.files[0].id },
      headers: s.dropUploads.files[0].upload.headers,
      bytes: { file: 'slides.txt', content: 'Slide 1: Why bread.\n' },
    }),
  },
  {
    op: 'anonymous.resumeUpload',
    status: 200,
    call: (s) => ({
      auth: dropper(s),
      params: { id: s.drop.id, objectId: s.dropUploads.files[1].id },
    }),
  },
  {
    op: 'anonymous.finalize',
    status: 200,
    keep: 'dropFinal',
    call: (s) => ({
      auth: dropper(s),
      params: { id: s.drop.id },
      json: { ids: [s.dropUploads.files[0].id] },
    }),
  },
  {
    op: 'anonymous.deleteFile',
    status: 200,
    call: (s) => ({
      auth: dropper(s),
      params: { id: s.drop.id, objectId: s.dropFinal.files[0].objectId },
    }),
  },
  { op: 'websites.claimCode', status: 201, keep: 'claimCode', call: (s) => ({ auth: person(s) }) },
  { op: 'anonymous.claim', status: 200, call: (s) => ({ auth: 'none', json: { token: s.credential.token, code: s.claimCode.code } }) },
  { op: 'websites.claimAnonymous', status: 200, call: (s) => ({ auth: person(s), json: { token: s.dropCredential.token } }) },
  { op: 'me.connections.revoke', status: 200, call: (s) => ({ auth: person(s), params: { grantId: s.connections.items[0].id } }) },

  // Another website: password, new subdomain, the trash, a transfer to Ada's workspace.
  {
    op: 'websites.create',
    scene: true,
    status: 201,
    keep: 'old',
    call: () => ({ json: { name: 'Old shop', kind: 'static', subdomain: 'old-shop' } }),
  },
  { op: 'websites.setPassword', status: 200, call: (s) => ({ params: { websiteId: s.old.id }, json: { password: 'let-me-in-2026' } }) },
  { op: 'websites.renameSubdomain', status: 200, call: (s) => ({ params: { websiteId: s.old.id }, json: { label: 'shop' } }) },
  { op: 'websites.delete', status: 200, call: (s) => ({ params: { websiteId: s.old.id } }) },
  { op: 'websites.list', status: 200, call: () => ({ query: { scope: 'trash' } }) },
  { op: 'websites.restore', status: 200, call: (s) => ({ params: { websiteId: s.old.id } }) },
  { op: 'websites.transferStart', status: 201, scene: true, call: (s) => ({ params: { websiteId: s.old.id }, json: {} }) },
  { op: 'websites.transferCancel', status: 200, call: (s) => ({ params: { websiteId: s.old.id } }) },
  {
    act: async (s) => {
      const me = await (s.ada as Browserless).api('GET', '/v1/me')
      s.adaWorkspace = me.body.organization.id
      const key = await (s.ada as Browserless).api('POST', '/v1/api-keys', {
        name: 'Ada’s key',
        access: { kind: 'organization', role: 'admin' },
      })
      if (key.status !== 201) throw new Error(`Ada's key: ${key.status} ${JSON.stringify(key.body)}`)
      s.adaKey = key.body.secret
    },
  },
  {
    op: 'websites.transferStart',
    status: 201,
    keep: 'transfer',
    call: (s) => ({ params: { websiteId: s.old.id }, json: { toOrganizationId: s.adaWorkspace } }),
  },
  { op: 'websites.transferGet', status: 200, call: (s) => ({ params: { websiteId: s.old.id } }) },
  {
    op: 'websites.transferAccept',
    status: 200,
    call: (s) => ({ auth: { token: s.adaKey, shown: '$RECEIVING_KEY' }, json: { code: s.transfer.code } }),
  },
]
