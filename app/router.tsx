import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react'

/**
 * A small router over the History API: clean URLs under /app that survive a reload and can be shared
 * (`/app/websites/ws_…/forms`). The workspace a person acts in rides in the query (`?workspace=org_…`)
 * and every link keeps it.
 */

export const BASE = '/app'

type Listener = () => void
const listeners = new Set<Listener>()

function notify(): void {
  for (const listener of listeners) listener()
}

window.addEventListener('popstate', notify)

/** The path below /app ('' for the home screen) and the query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0)
  useEffect(() => {
    const listener = () => setTick((n) => n + 1)
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }, [])
  return { path: location.pathname.slice(BASE.length).replace(/\/$/, ''), query: new URLSearchParams(location.search) }
}

/** `to` under /app with the current workspace kept (unless `to` names one). */
export function href(to: string): string {
  const [path, search = ''] = to.split('?')
  const query = new URLSearchParams(search)
  const workspace = new URLSearchParams(location.search).get('workspace')
  if (workspace !== null && !query.has('workspace')) query.set('workspace', workspace)
  const text = query.toString()
  return `${BASE}${path}${text === '' ? '' : `?${text}`}`
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const target = to.startsWith(BASE) ? to : href(to)
  if (options.replace === true) history.replaceState(null, '', target)
  else history.pushState(null, '', target)
  notify()
  window.scrollTo(0, 0)
}

/** A link inside the dashboard: a real href (open in a new tab works), navigated without a reload. */
export function Link({ to, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const target = href(to)
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    rest.onClick?.(event)
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    navigate(target)
  }
  return <a {...rest} href={target} onClick={onClick} />
}

/** Matches `path` against a pattern with `:name` segments; the parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const names: string[] = []
  const source = pattern.replace(/:(\w+)/g, (_, name: string) => {
    names.push(name)
    return '([^/]+)'
  })
  const found = new RegExp(`^${source}$`).exec(path)
  if (found === null) return null
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1])]))
}
