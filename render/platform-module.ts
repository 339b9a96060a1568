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
export const cms = new Proxy({}, { get: () => ({ list: () => ({ items: [], total: 0 }), bySlug: () => null, byId: () => null }) })
`
