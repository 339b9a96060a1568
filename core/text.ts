/** Text as a literal inside a regular expression (Node 20 has no RegExp.escape yet). */
/** Text for HTML: `&`, `<`, `>`, `"` and `'` escaped (the pages' html`` template and the mail's HTML parts). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The host name of an address pasted for a domain (`https://www.example.com/path`, `www.example.com/`); null for a bare name. */
export function hostOfAddress(value: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !value.includes('/')) return null
  try {
    const host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`).hostname
    return host === '' ? null : host
  } catch {
    return null
  }
}

/** A size as people read it: bytes below 1 KiB, then KiB, MiB, GiB, TiB (one decimal under 10). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let value = n / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}
