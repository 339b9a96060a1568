/** Text as a literal inside a regular expression (Node 20 has no RegExp.escape yet). */
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
