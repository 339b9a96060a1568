import { marked } from 'marked'
import { ApiError } from '../../core/errors.js'
import { PACKAGE_VERSIONS } from '../../render/packages.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { CollectionRecord } from '../../core/schemas/cms.js'
import type { WebsiteKind } from '../../core/schemas/website.js'
import type { Cms } from './cms.js'
import type { FieldInput } from './rules.js'
import type { WebsiteActor } from '../website/actor.js'

/** The managed blog's collection (spec: Managed blog). */
export const BLOG_COLLECTION = 'blog-posts'

/** Its fields; on first use title is required, fields added later to an existing collection are optional. */
const BLOG_FIELDS: FieldInput[] = [
  { key: 'title', name: 'Title', type: 'text', required: true },
  { key: 'date', name: 'Date', type: 'date' },
  { key: 'excerpt', name: 'Excerpt', type: 'text' },
  { key: 'body', name: 'Body', type: 'rich_text' },
  { key: 'tags', name: 'Tags', type: 'json' },
  { key: 'cover', name: 'Cover', type: 'image' },
]

export const BLOG_INDEX_PAGE = 'blog'
export const BLOG_POST_PAGE = 'blog-post'

/** The scaffolded `/blog` page: published posts, newest first. */
const INDEX_SOURCE = `import { definePage, cms } from '@platform'

export default definePage({
  route: '/blog',
  metadata: { title: 'Blog' },
  queries: () => ({ posts: cms.blogPosts.list({ sort: { field: 'date', direction: 'desc' } }).items }),
  render: ({ data }) => (
    <main>
      <h1>Blog</h1>
      <ul>
        {data.posts.map((post) => (
          <li key={post.id}>
            <a href={'/blog/' + post.slug}>{post.title}</a>
            {post.date ? <time dateTime={post.date}> {post.date}</time> : null}
            {post.excerpt ? <p>{post.excerpt}</p> : null}
          </li>
        ))}
      </ul>
    </main>
  ),
})
`

/** The scaffolded `/blog/:slug` page: one published post, its Markdown body as HTML (the pinned `marked`). */
const POST_SOURCE = `import { definePage, cms } from '@platform'
import { marked } from 'marked@${PACKAGE_VERSIONS.marked}'

export default definePage({
  route: '/blog/:slug',
  metadata: { title: '{{ data.post.title }}', description: '{{ data.post.excerpt }}' },
  queries: ({ params }) => ({ post: cms.blogPosts.bySlug(params.slug) }),
  render: ({ data }) =>
    data.post === null ? (
      <main>
        <h1>Not found</h1>
      </main>
    ) : (
      <article>
        <h1>{data.post.title}</h1>
        {data.post.date ? <time dateTime={data.post.date}>{data.post.date}</time> : null}
        {data.post.cover ? <img src={data.post.cover.url} alt={data.post.cover.altText} /> : null}
        <div dangerouslySetInnerHTML={{ __html: marked.parse(data.post.body ?? '', { async: false }) as string }} />
        <p>
          <a href="/blog">All posts</a>
        </p>
      </article>
    ),
})
`

export interface BlogRendering {
  kind: 'framework' | 'static' | 'storage'
  /** The site has pages that render the posts. */
  connected: boolean
  /** This call wrote them (a new head version). */
  scaffolded: boolean
  indexPath: string
  postPathPattern: string
}

/**
 * Where the blog's pages answer, as a visitor reaches them without a redirect: a framework site's
 * scaffolded routes (`/blog`, `/blog/:slug`); a static site's generated folders (`blog/index.html`,
 * `blog/<slug>/index.html`), which answer at `/blog/` and `/blog/<slug>/` (one address per page: the
 * path without the slash moves there with a 308).
 */
export function blogPaths(kind: WebsiteKind): { indexPath: string; postPathPattern: string } {
  return kind === 'static'
    ? { indexPath: '/blog/', postPathPattern: '/blog/:slug/' }
    : { indexPath: '/blog', postPathPattern: '/blog/:slug' }
}

/**
 * The managed blog (spec: deprecated, still served): posts are items of the `blog-posts` collection,
 * made on first use (an existing one reused, missing fields added as optional). On a framework site the
 * first post scaffolds `/blog` and `/blog/:slug` pages that query it, as a new head version: the
 * scaffolder takes the edit lease as any writer does (a previous holder's token stops working).
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c])

const page = (title: string, description: string, body: string) =>
  `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>${escape(title)}</title>\n` +
  (description === ''
    ? ''
    : `<meta name="description" content="${escape(description)}">\n<meta property="og:description" content="${escape(description)}">\n`) +
  `<meta property="og:title" content="${escape(title)}">\n<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;line-height:1.6}img{max-width:100%}time{color:#57606a}</style>\n</head>\n<body>\n${body}\n</body>\n</html>\n`

export class Blog {
  constructor(private readonly cms: Cms) {}

  /**
   * A static site's blog pages, from the published posts: `blog/index.html` (newest first) and
   * `blog/<slug>/index.html` (the Markdown body as HTML, with `marked`). None without a blog.
   */
  staticPages(websiteId: string, siteName: string): { path: string; html: string }[] {
    const collection = this.collection(websiteId)
    if (collection === null) return []
    const posts = this.cms.listItems(websiteId, collection.id, {
      limit: 10_000,
      offset: 0,
      status: 'published',
      sort: { field: 'date', direction: 'desc' },
    }).items
    if (posts.length === 0) return []
    const text = (value: unknown) => (typeof value === 'string' ? value : '')
    const pages = posts.map((post) => {
      const title = text(post.values.title) || post.slug
      const date = text(post.values.date)
      const cover = text(post.values.cover)
      const body = marked.parse(text(post.values.body), { async: false }) as string
      return {
        path: `blog/${post.slug}/index.html`,
        html: page(
          title,
          text(post.values.excerpt),
          `<article>\n<h1>${escape(title)}</h1>\n${date === '' ? '' : `<time datetime="${escape(date)}">${escape(date)}</time>\n`}${cover === '' ? '' : `<img src="/_platform/media/${escape(cover)}" alt="">\n`}${body}\n<p><a href="/blog/">All posts</a></p>\n</article>`,
        ),
      }
    })
    const list = posts
      .map((post) => {
        const title = text(post.values.title) || post.slug
        const date = text(post.values.date)
        const excerpt = text(post.values.excerpt)
        return `<li><a href="/blog/${escape(post.slug)}/">${escape(title)}</a>${date === '' ? '' : ` <time datetime="${escape(date)}">${escape(date)}</time>`}${excerpt === '' ? '' : `<p>${escape(excerpt)}</p>`}</li>`
      })
      .join('\n')
    return [
      { path: 'blog/index.html', html: page(`Blog · ${siteName}`, '', `<main>\n<h1>Blog</h1>\n<ul>\n${list}\n</ul>\n</main>`) },
      ...pages,
    ]
  }

  /** The blog's collection, or null before first use. */
  collection(websiteId: string): CollectionRecord | null {
    try {
      return this.cms.collection(websiteId, BLOG_COLLECTION)
    } catch {
      return null
    }
  }

  /** The collection, made or completed now: what was created or added. */
  async ensureCollection(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
  ): Promise<{ collection: CollectionRecord; created: boolean; addedFields: string[] }> {
    const existing = this.collection(websiteId)
    if (existing === null) {
      const collection = await this.cms.createCollection(websiteId, orgId, actor, {
        name: 'Blog posts',
        slug: BLOG_COLLECTION,
        fields: BLOG_FIELDS,
      })
      return { collection, created: true, addedFields: BLOG_FIELDS.map((f) => f.key!) }
    }
    const addedFields: string[] = []
    let collection = existing
    for (const field of BLOG_FIELDS) {
      if (collection.fields.some((f) => f.key === field.key)) continue
      collection = (await this.cms.addField(websiteId, orgId, actor, BLOG_COLLECTION, { ...field, required: false })).collection
      addedFields.push(field.key!)
    }
    return { collection, created: false, addedFields }
  }

  /** Whether the site renders the blog, and on a framework site without its pages, writes them. */
  async rendering(website: WebsiteActor, actor: AuditActorValue | null): Promise<{ rendering: BlogRendering; notes: string[] }> {
    const record = website.record
    const base = blogPaths(record.kind)
    if (record.kind === 'static') {
      const collection = this.collection(record.id)
      const live =
        collection !== null && this.cms.listItems(record.id, collection.id, { limit: 1, offset: 0, status: 'published' }).total > 0
      return {
        rendering: { kind: 'static', connected: live, scaffolded: false, ...base },
        notes: live
          ? [
              "Static site: /blog/ and a page a published post are generated from the collection and served beside the deployed files (the site's own files of the same path win).",
            ]
          : ['Static site: /blog/ and the post pages appear once a post is published.'],
      }
    }
    if (record.kind !== 'framework') {
      return {
        rendering: { kind: record.kind, connected: false, scaffolded: false, ...base },
        notes: ['A storage website shares files; it has no blog pages.'],
      }
    }
    const head = website.head
    const has = (page: string) => head.files[`pages/${page}.tsx`] !== undefined
    if (has(BLOG_INDEX_PAGE) && has(BLOG_POST_PAGE))
      return { rendering: { kind: 'framework', connected: true, scaffolded: false, ...base }, notes: [] }
    if (actor === null)
      return {
        rendering: { kind: 'framework', connected: false, scaffolded: false, ...base },
        notes: ['The site has no blog pages yet; the next post created scaffolds them.'],
      }
    const { leaseToken } = await website.framework.acquireLease(actor)
    if (!has(BLOG_INDEX_PAGE))
      await website.framework.putSource(
        actor,
        leaseToken,
        { type: 'page', name: BLOG_INDEX_PAGE },
        INDEX_SOURCE,
        'Scaffold the blog index (/blog)',
      )
    if (!website.head.files[`pages/${BLOG_POST_PAGE}.tsx`])
      await website.framework.putSource(
        actor,
        leaseToken,
        { type: 'page', name: BLOG_POST_PAGE },
        POST_SOURCE,
        'Scaffold the blog post page (/blog/:slug)',
      )
    return {
      rendering: { kind: 'framework', connected: true, scaffolded: true, ...base },
      notes: [
        `Pages ${BLOG_INDEX_PAGE} (/blog) and ${BLOG_POST_PAGE} (/blog/:slug) were written as head version ${website.head.version}; publish it to show the blog on the live site.`,
        'Scaffolding took the edit lease: acquire it again (and re-read the files) before the next source edit.',
      ],
    }
  }

  /** A post by id or slug, or 404. */
  postId(websiteId: string, idOrSlug: string, slugs: (collectionId: string, slug: string) => string | undefined): string {
    const collection = this.collection(websiteId)
    if (collection === null) throw new ApiError('not_found', 'This website has no blog yet; create a post to start it')
    if (idOrSlug.startsWith('itm_')) return idOrSlug
    const id = slugs(collection.id, idOrSlug)
    if (id === undefined) throw new ApiError('not_found', `No blog post with slug ${idOrSlug}`)
    return id
  }
}
