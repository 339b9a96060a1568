// The `cms` declaration of @platform that site code is typechecked against, generated from a website's collections.
import type { CollectionRecord, FieldDef } from '../../core/schemas/cms.js'

/** A collection's name in page code (`cms.<key>` of @platform): its slug camelCased, `blog-posts` as `blogPosts`. */
export function collectionKey(slug: string): string {
  return slug.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
}

/** An identifier for a type name: `blog-posts` to `BlogPosts`. */
function typeName(slug: string): string {
  const key = collectionKey(slug)
  return key[0].toUpperCase() + key.slice(1)
}

/**
 * The declaration of `cms` of @platform generated from a site's schema: an item type a collection,
 * fields optional unless required, select values as their options, assets as AssetRef. A reference
 * resolves one level deep: it is the referenced collection's shallow type, whose own references are
 * ids, so reading through two references is a type error, as the data is.
 */
export function typesOf(collections: CollectionRecord[]): string {
  const lines: string[] = [
    'export interface AssetRef { id: string; url: string; filename: string; contentType: string; altText: string; kind: string; width?: number; height?: number }',
  ]
  const base = 'id: string; slug: string; publishedAt: string | null; createdAt: string; updatedAt: string; position: number'
  const fieldType = (field: FieldDef, shallow: boolean): string => {
    const target = collections.find((c) => c.id === field.collectionId)
    const options = (field.options ?? []).map((o) => JSON.stringify(o)).join(' | ') || 'string'
    switch (field.type) {
      case 'number':
        return 'number'
      case 'boolean':
        return 'boolean'
      case 'select':
        return options
      case 'multi_select':
        return `Array<${options}>`
      case 'image':
      case 'file':
        return 'AssetRef | null'
      case 'gallery':
        return 'AssetRef[]'
      case 'reference':
        return shallow || target === undefined ? 'string' : `${typeName(target.slug)}Shallow | null`
      case 'multi_reference':
        return shallow || target === undefined ? 'string[]' : `${typeName(target.slug)}Shallow[]`
      case 'json':
        return 'unknown'
      default:
        return 'string'
    }
  }
  for (const collection of collections) {
    for (const shallow of [false, true]) {
      const fields = collection.fields.map((f) => `${f.key}${f.required ? '' : '?'}: ${fieldType(f, shallow)}`)
      lines.push(`export interface ${typeName(collection.slug)}${shallow ? 'Shallow' : 'Item'} { ${[base, ...fields].join('; ')} }`)
    }
  }
  lines.push(
    `export declare const cms: { ${collections.map((c) => `${JSON.stringify(collectionKey(c.slug))}: Collection<${typeName(c.slug)}Item>`).join('; ')} }`,
  )
  return lines.join('\n')
}
