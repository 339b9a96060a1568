// The website the tabs under /websites/:id show, apart from the screen that loads it.
import { createContext, useContext } from 'react'
import type { Website } from '../../types.js'
import type { Resource } from '../../ui/data.js'

export const WebsiteContext = createContext<Resource<Website> | null>(null)

/** The website a screen under /websites/:id shows, loaded once for its tabs; reload after a change. */
export function useWebsite(): { website: Website; reload(): Promise<void> } {
  const resource = useContext(WebsiteContext)!
  return { website: resource.data!, reload: resource.reload }
}
