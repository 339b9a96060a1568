import { useState } from 'react'
import { api, type RequestOptions } from '../api.js'
import { useResource, type Resource } from './data.js'
import { Button } from './kit.js'

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

/**
 * One page of a list the API pages with cursors (spec: `{items, nextCursor}`), with the cursors of
 * the pages before it kept for Previous.
 */
export function usePaged<T, P extends Page<T> = Page<T>>(
  path: string,
  query: RequestOptions['query'] = {},
  limit = 20,
): Resource<P> & { pager: { previous(): void; next(): void; hasPrevious: boolean; hasNext: boolean; page: number } } {
  const [cursors, setCursors] = useState<string[]>([])
  const cursor = cursors.at(-1)
  const key = `${path}?${JSON.stringify(query)}&${cursor ?? ''}`
  const resource = useResource<P>(key, (signal) => api<P>('GET', path, { query: { ...query, limit, cursor }, signal }))
  const [lastKey, setLastKey] = useState(`${path}?${JSON.stringify(query)}`)
  if (lastKey !== `${path}?${JSON.stringify(query)}`) {
    setLastKey(`${path}?${JSON.stringify(query)}`)
    setCursors([])
  }
  return {
    ...resource,
    pager: {
      previous: () => setCursors((c) => c.slice(0, -1)),
      next: () => resource.data?.nextCursor != null && setCursors((c) => [...c, resource.data!.nextCursor!]),
      hasPrevious: cursors.length > 0,
      hasNext: resource.data?.nextCursor != null,
      page: cursors.length + 1,
    },
  }
}

export function Pager({
  pager,
  label,
}: {
  pager: { previous(): void; next(): void; hasPrevious: boolean; hasNext: boolean; page: number }
  label: string
}) {
  if (!pager.hasPrevious && !pager.hasNext) return null
  return (
    <nav aria-label={`${label} pages`} className="mt-3 flex items-center justify-between gap-2 text-sm">
      <Button onClick={pager.previous} disabled={!pager.hasPrevious}>
        Previous
      </Button>
      <span className="text-zinc-600">Page {pager.page}</span>
      <Button onClick={pager.next} disabled={!pager.hasNext}>
        Next
      </Button>
    </nav>
  )
}
