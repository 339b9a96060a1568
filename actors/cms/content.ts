// What page code reads (`cms` of @platform): a website's published items as JSON, or placeholders at check time, with their types.
import type { CollectionRecord, ItemRecord } from '../../core/schemas/cms.js'
import type { StoreReader } from '../../core/store/reader.js'
import type { ItemCache } from './item-cache.js'
import { collectionKey, typesOf } from './page-types.js'
import { itemPublishedAt, itemStatus } from './rules.js'

/**
 * The website's CMS content for a build, as JSON: collection key (the slug camelCased,
 * `blog-posts` as `blogPosts`) to its published items, references resolved one level (the published
 * item or null), assets to `{id, url, filename, contentType, altText, kind, width?, height?}`. At check
 * time (`phase: 'check'`) two placeholder items a collection that satisfy the schema stand in.
 */
export function pageContent(
  store: StoreReader,
  cache: ItemCache,
  collections: CollectionRecord[],
  websiteId: string,
  origin: string,
  phase: 'check' | 'build',
  now: number,
): { data: string; types: string } {
  if (collections.length === 0) return { data: '{}', types: '' }
  const out: Record<string, Record<string, unknown>[]> = {}
  const asset = (id: unknown) => {
    const record = typeof id === 'string' ? store.assets.get(id) : undefined
    if (record === undefined || record.websiteId !== websiteId || record.status !== 'ready') return null
    return {
      id: record.id,
      url: `${origin}/_platform/media/${record.id}`,
      filename: record.filename,
      contentType: record.contentType,
      altText: record.altText,
      kind: record.kind,
      ...(record.width === null ? {} : { width: record.width, height: record.height }),
    }
  }
  const published = (id: unknown): ItemRecord | null => {
    const item = typeof id === 'string' ? store.items.get(id) : undefined
    return item !== undefined && item.websiteId === websiteId && item.deletedAt === null && itemStatus(item, now) === 'published'
      ? item
      : null
  }
  const view = (item: ItemRecord, depth: number): Record<string, unknown> => {
    const collection = collections.find((c) => c.id === item.collectionId)
    const at = itemPublishedAt(item, now)
    const out: Record<string, unknown> = {
      id: item.id,
      slug: item.slug,
      publishedAt: at === null ? null : new Date(at).toISOString(),
      createdAt: new Date(item.createdAt).toISOString(),
      updatedAt: new Date(item.updatedAt).toISOString(),
      position: item.position,
    }
    for (const field of collection?.fields ?? []) {
      const value = item.values[field.key]
      if (value === undefined) continue
      if (field.type === 'image' || field.type === 'file') out[field.key] = asset(value)
      else if (field.type === 'gallery') out[field.key] = (value as unknown[]).map(asset).filter((a) => a !== null)
      else if (field.type === 'reference')
        out[field.key] = depth > 0 ? (published(value) === null ? null : view(published(value)!, depth - 1)) : value
      else if (field.type === 'multi_reference')
        out[field.key] =
          depth > 0
            ? (value as unknown[])
                .map(published)
                .filter((i): i is ItemRecord => i !== null)
                .map((i) => view(i, depth - 1))
            : value
      else out[field.key] = value
    }
    return out
  }
  const placeholders = (collection: CollectionRecord, depth: number): Record<string, unknown>[] =>
    [1, 2].map((n) => {
      const out: Record<string, unknown> = {
        id: `itm_placeholder_${collection.slug}_${n}`,
        slug: `example-${n}`,
        publishedAt: '2026-01-01T00:00:00.000Z',
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
        position: n,
      }
      const image = {
        id: 'ast_placeholder',
        url: `${origin}/_platform/media/ast_placeholder`,
        filename: 'placeholder.png',
        contentType: 'image/png',
        altText: 'Placeholder',
        kind: 'image',
        width: 800,
        height: 600,
      }
      for (const field of collection.fields) {
        const target = collections.find((c) => c.id === field.collectionId)
        out[field.key] = {
          text: `Example ${field.name} ${n}`,
          rich_text: `# Example ${field.name} ${n}\n\nSome text.`,
          number: n,
          boolean: n === 1,
          date: `2026-01-0${n}`,
          datetime: `2026-01-0${n}T09:00:00.000Z`,
          select: field.options?.[0] ?? '',
          multi_select: field.options?.slice(0, 1) ?? [],
          url: `https://example.com/${n}`,
          email: `someone${n}@example.com`,
          color: '#336699',
          image,
          file: { ...image, filename: 'placeholder.pdf', contentType: 'application/pdf', kind: 'document' },
          gallery: [image],
          reference: depth > 0 && target !== undefined ? placeholders(target, depth - 1)[0] : `itm_placeholder_${target?.slug ?? 'item'}_1`,
          multi_reference: depth > 0 && target !== undefined ? placeholders(target, depth - 1) : [],
          json: {},
        }[field.type]
      }
      return out
    })
  for (const collection of collections) {
    const key = collectionKey(collection.slug)
    out[key] =
      phase === 'check'
        ? placeholders(collection, 1)
        : cache
            .sorted(collection.id)
            .filter((i) => i.deletedAt === null && itemStatus(i, now) === 'published')
            .map((i) => view(i, 1))
  }
  return { data: JSON.stringify(out), types: typesOf(collections) }
}
