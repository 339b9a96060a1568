import { ApiError } from '../core/errors.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import type { CollectionRecord } from '../core/schemas/cms.js'
import type { Cms, FieldInput } from './cms.js'
import type { WebsiteActor } from './website/actor.js'

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

/** The scaffolded `/blog/:slug` page: one published post, its Markdown body as paragraphs. */
const POST_SOURCE = `import { definePage, cms } from '@platform'

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
        {(data.post.body ?? '').split(/\\n{2,}/).map((paragraph, i) => (
          <p key={i}>{paragraph.replace(/^#+\\s*/, '')}</p>
        ))}
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
 * The managed blog (spec: deprecated, still served): posts are items of the `blog-posts` collection,
 * made on first use (an existing one reused, missing fields added as optional). On a framework site the
 * first post scaffolds `/blog` and `/blog/:slug` pages that query it, as a new head version: the
 * scaffolder takes the edit lease as any writer does (a previous holder's token stops working).
 */
export class Blog {
  constructor(private readonly cms: Cms) {}

  /** The blog's collection, or null before first use. */
  collection(websiteId: string): CollectionRecord | null {
    try {
      return this.cms.collection(websiteId, BLOG_COLLECTION)
    } catch {
      return null
    }
  }

  /** The collection, made or completed now: what was created or added. */
  async ensureCollection(websiteId: string, orgId: string, actor: AuditActorValue): Promise<{ collection: CollectionRecord; created: boolean; addedFields: string[] }> {
    const existing = this.collection(websiteId)
    if (existing === null) {
      const collection = await this.cms.createCollection(websiteId, orgId, actor, { name: 'Blog posts', slug: BLOG_COLLECTION, fields: BLOG_FIELDS })
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
    const base = { indexPath: '/blog', postPathPattern: '/blog/:slug' }
    if (record.kind !== 'framework') {
      return {
        rendering: { kind: record.kind, connected: false, scaffolded: false, ...base },
        notes: ['This is a static site: its blog pages are not rendered from the collection yet. Posts are stored and served by the API; add pages for them with the deploy calls.'],
      }
    }
    const head = website.head
    const has = (page: string) => head.files[`pages/${page}.tsx`] !== undefined
    if (has(BLOG_INDEX_PAGE) && has(BLOG_POST_PAGE)) return { rendering: { kind: 'framework', connected: true, scaffolded: false, ...base }, notes: [] }
    if (actor === null) return { rendering: { kind: 'framework', connected: false, scaffolded: false, ...base }, notes: ['The site has no blog pages yet; the next post created scaffolds them.'] }
    const { leaseToken } = await website.framework.acquireLease(actor)
    if (!has(BLOG_INDEX_PAGE)) await website.framework.putSource(actor, leaseToken, { type: 'page', name: BLOG_INDEX_PAGE }, INDEX_SOURCE, 'Scaffold the blog index (/blog)')
    if (!website.head.files[`pages/${BLOG_POST_PAGE}.tsx`]) await website.framework.putSource(actor, leaseToken, { type: 'page', name: BLOG_POST_PAGE }, POST_SOURCE, 'Scaffold the blog post page (/blog/:slug)')
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
