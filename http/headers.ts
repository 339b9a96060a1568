/** Request and response headers as the exchange hands them over, and the Host header's hostname. */

export type Headers = Record<string, string>

/** The Host header without its port (case as sent). */
export function hostname(host: string): string {
  let end = host.length
  if (host.charCodeAt(0) === 91 /* [ */) {
    const close = host.indexOf(']')
    end = close === -1 ? end : close + 1
  } else {
    const colon = host.indexOf(':')
    if (colon !== -1) end = colon
  }
  return end === host.length ? host : host.slice(0, end)
}
