/**
 * The `@platform` module as sites import it at render time: the helpers of the spec's page module
 * shape. Definitions are identity functions; URLs are same-origin paths under /_platform/.
 */
export const PLATFORM_MODULE_SOURCE = `
export function definePage(definition) { return definition }
export function defineWebsiteConfig(config) { return config }
function query(options) {
  const params = []
  if (options && options.width) params.push('w=' + options.width)
  if (options && options.height) params.push('h=' + options.height)
  if (options && options.fit) params.push('fit=' + options.fit)
  if (options && options.format) params.push('fm=' + options.format)
  if (options && options.quality) params.push('q=' + options.quality)
  return params.length ? '?' + params.join('&') : ''
}
export function imageUrl(asset, options) {
  const id = typeof asset === 'string' ? asset : asset.id
  return '/_platform/img/' + encodeURIComponent(id) + query(options)
}
export function srcSet(asset, widths, options) {
  return widths.map((w) => imageUrl(asset, Object.assign({}, options, { width: w })) + ' ' + w + 'w').join(', ')
}
export function formAction(name) { return '/_platform/forms/' + encodeURIComponent(name) }
export function track(name, data) {
  if (typeof window === 'undefined') return
  var p = window.platform || (window.platform = {})
  if (p.track) p.track(name, data)
  else (p.q = p.q || []).push([name, data])
}
// The site's CMS content, given to the render isolate as JSON (published items at build, placeholder
// items at check); in the browser there is none: pages read it in queries, which run on the server.
let content = null
function collectionItems(name) {
  if (content === null) {
    const json = typeof globalThis.__plinthCmsJson === 'string' ? globalThis.__plinthCmsJson : '{}'
    content = JSON.parse(json)
  }
  return Object.prototype.hasOwnProperty.call(content, name) ? content[name] : []
}
function compare(a, b) {
  return typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))
}
function test(value, op, operand) {
  const present = value !== undefined && value !== null && value !== ''
  const lower = (v) => (typeof v === 'string' ? v.toLowerCase() : v)
  switch (op) {
    case 'exists': return present === (operand !== false)
    case 'eq': return JSON.stringify(value) === JSON.stringify(operand)
    case 'neq': return JSON.stringify(value) !== JSON.stringify(operand)
    case 'contains': return Array.isArray(value) ? value.includes(operand) : typeof value === 'string' && typeof operand === 'string' && lower(value).includes(lower(operand))
    case 'startsWith': return typeof value === 'string' && typeof operand === 'string' && lower(value).startsWith(lower(operand))
    case 'endsWith': return typeof value === 'string' && typeof operand === 'string' && lower(value).endsWith(lower(operand))
    case 'gt': return present && compare(value, operand) > 0
    case 'gte': return present && compare(value, operand) >= 0
    case 'lt': return present && compare(value, operand) < 0
    case 'lte': return present && compare(value, operand) <= 0
    case 'in': return Array.isArray(operand) && (Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
    case 'nin': return Array.isArray(operand) && !(Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
    default: throw new Error('unknown filter operator ' + op + ' (use eq, neq, contains, startsWith, endsWith, gt, gte, lt, lte, in, nin, exists)')
  }
}
// While a page's queries run, calls whose argument is one of the route's params are noted: a dynamic
// route is enumerated from the collection its param looks up (bySlug, byId, or a list filter eq).
function bound(name, by, value) {
  const record = globalThis.__plinthBindings
  const params = globalThis.__plinthParams
  if (!record || !params) return
  for (const key in params) if (params[key] === value) record.push({ param: key, collection: name, by })
}
function collection(name) {
  return {
    list(options) {
      const o = options || {}
      if (o.filter) for (const field in o.filter) if (o.filter[field] && 'eq' in o.filter[field]) bound(name, field, o.filter[field].eq)
      let items = collectionItems(name).slice()
      if (o.search) {
        const needle = String(o.search).toLowerCase()
        items = items.filter((item) => Object.values(item).some((v) => typeof v === 'string' && v.toLowerCase().includes(needle)))
      }
      if (o.filter) {
        const clauses = Object.entries(o.filter)
        items = items.filter((item) => {
          const results = clauses.map(([field, ops]) => Object.entries(ops || {}).every(([op, operand]) => test(item[field], op, operand)))
          return o.filterLogic === 'or' ? results.some(Boolean) : results.every(Boolean)
        })
      }
      const sort = o.sort || { field: 'position', direction: 'asc' }
      items.sort((a, b) => {
        const x = a[sort.field], y = b[sort.field]
        if (x === undefined || x === null) return y === undefined || y === null ? a.position - b.position : 1
        if (y === undefined || y === null) return -1
        const order = compare(x, y) || a.position - b.position
        return sort.direction === 'desc' ? -order : order
      })
      const total = items.length
      const offset = Math.max(0, o.offset || 0)
      const limit = Math.min(100, Math.max(1, o.limit || 100))
      return { items: items.slice(offset, offset + limit), total }
    },
    bySlug(slug) { bound(name, 'slug', slug); return collectionItems(name).find((item) => item.slug === slug) || null },
    byId(id) { bound(name, 'id', id); return collectionItems(name).find((item) => item.id === id) || null },
  }
}
export const cms = new Proxy({}, { get: (_, name) => (typeof name === 'string' ? collection(name) : undefined) })
`
