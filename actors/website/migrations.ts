// The website concern's schema migrations (actors/migrations.ts runs them, once per installation).
import type { Store } from '../../core/store/store.js'

/** Records rewritten a commit (one log entry in a cluster). */
const BATCH = 100

/**
 * The test-only migration of the next build (PLINTH_TEST_LOG_FORMAT=3): every website record written
 * again as it is, a hundred a commit, each read in the commit that writes it. It changes no byte, and
 * writes the log entries a real migration would, in the new format.
 */
export const rewriteWebsites = {
  id: 'test-format-2-websites',
  what: 'every website record written again (the test-only format 3)',
  async run(store: Store): Promise<number> {
    let count = 0
    let after: string | undefined
    for (;;) {
      const keys = [...store.websites.db.getKeys({ start: after, limit: BATCH + 1 })]
        .map(String)
        .filter((key) => key !== after)
        .slice(0, BATCH)
      if (keys.length === 0) return count
      count += await store.commit(() => {
        let written = 0
        for (const key of keys) {
          const record = store.websites.get(key)
          if (record === undefined) continue
          store.websites.put(key, record)
          written++
        }
        return written
      })
      after = keys[keys.length - 1]
    }
  },
}
