/**
 * npm run bench:sweep — the anonymous sweeper over 100,000 credentials (issue 13).
 *
 * 100,000 credentials are written straight into a fresh data directory, each with its deadline
 * rows; 1,000 of them own a real, published static website made through the actors. Then three
 * passes on a moved clock: nothing due (the pass reads only due rows), the 24-hour window of the
 * 1,000 websites (each goes offline through its actor), the windows of the other 99,000 at once,
 * and every claim deadline at once (100,000 credentials expire, 1,000 websites are purged). Each row prints the pass's time and the event
 * loop's delay while it ran: the serving thread is the same thread, so that delay is what a
 * request waiting to be served would see.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { anonymousActor } from '../actors/anonymous/credentials.js'
import { ManualClock } from '../core/clock.js'
import { loadConfig } from '../core/config.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../core/ids.js'
import { ANON_CLAIM_WINDOW_MS, ANON_WINDOW_MS } from '../core/limits.js'
import { PublicUrls } from '../core/hostnames.js'
import { silentLogger } from '../core/log.js'
import type { AnonymousCredentialRecord } from '../core/schemas/anonymous.js'
import { openServices } from '../plinth/services.js'
import { runBenchmark } from './main.js'

const CREDENTIALS = Number(process.env.BENCH_CREDENTIALS ?? 100_000)
const WITH_SITES = Number(process.env.BENCH_SITES ?? 1_000)

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-sweep-'))
  const clock = new ManualClock()
  const config = loadConfig({ PLINTH_DATA_DIR: dir })
  const services = await openServices(
    { config, clock, log: silentLogger, offline: true },
    () => new PublicUrls('http://localhost:8080', 'localhost', null),
  )
  const { registry, store } = services
  try {
    const start = clock.now()
    const claimUntil = start + ANON_CLAIM_WINDOW_MS
    const windowUntil = start + ANON_WINDOW_MS
    // Credentials with their token index and deadline rows, written in large transactions. The
    // windows of the ones with a website end 12 hours in; the others' at 24 hours.
    const ids: string[] = []
    for (let done = 0; done < CREDENTIALS;) {
      const batch = Math.min(10_000, CREDENTIALS - done)
      await store.commit(() => {
        for (let i = 0; i < batch; i++) {
          const id = newId('anc')
          const until = done + i < WITH_SITES ? start + ANON_WINDOW_MS / 2 : windowUntil
          const record: AnonymousCredentialRecord = {
            v: 1,
            id,
            tokenHash: hashSecret(newSecret(SECRET_PREFIXES.anonymous)),
            network: `10.${((done + i) >> 16) & 255}.${((done + i) >> 8) & 255}.${(done + i) & 255}`,
            createdAt: start,
            state: 'active',
            orgId: null,
            claimUntil,
            websiteId: null,
            websiteUntil: until,
            storageId: null,
            storageUntil: null,
            bytesUsed: 0,
            claimedBy: null,
            claimedAt: null,
            claimedInto: null,
          }
          store.anonCredentials.put(id, record)
          store.anonTokens.put(record.tokenHash, id)
          store.anonDeadlines.put([until, 'credential', id], '')
          store.anonDeadlines.put([claimUntil, 'credential', id], '')
          ids.push(id)
        }
      })
      done += batch
    }
    // Real websites for the first WITH_SITES credentials, made and published through the actors.
    for (let i = 0; i < WITH_SITES; i++) {
      const credential = store.anonCredentials.get(ids[i])!
      const org = { v: 1 as const, id: newId('org'), name: 'Anonymous sites', createdAt: start, kind: 'anonymous' as const }
      await store.commit(() => store.organizations.put(org.id, org))
      const actor = anonymousActor(credential)
      const record = await registry
        .organization(org.id)!
        .createWebsite(
          actor,
          { name: `site ${i}`, kind: 'static', subdomain: `bench-sweep-${i}` },
          { previewUntil: credential.websiteUntil },
        )
      const website = registry.website(record.id)!
      const bytes = Buffer.from(`<p>site ${i}</p>`)
      const { prepareUploads } = await import('../actors/website/static-files.js')
      await website.deploy(actor, {
        uploads: await prepareUploads(store, [{ path: 'index.html', bytes }], 'files'),
        deletes: [],
        replace: true,
        expectedHeadVersion: undefined,
        message: 'bench',
      })
      await website.publish(actor)
      await store.commit(() => store.anonCredentials.put(credential.id, { ...credential, orgId: org.id, websiteId: record.id }))
    }
    registry.evictIdle()
    registry.evictIdle()

    const pass = async (name: string) => {
      const delay = monitorEventLoopDelay({ resolution: 1 })
      delay.enable()
      const t0 = performance.now()
      const acted = await registry.anonymous.sweep()
      const ms = performance.now() - t0
      delay.disable()
      console.log(
        `| ${name} | ${acted} | ${ms.toFixed(0)} | ${(delay.percentile(99) / 1e6).toFixed(1)} | ${(delay.max / 1e6).toFixed(1)} |`,
      )
    }
    console.log(
      `\nThe anonymous sweeper, ${CREDENTIALS.toLocaleString('en')} credentials (${WITH_SITES.toLocaleString('en')} with a live website)\n`,
    )
    console.log('| pass | deadlines acted on | ms | event-loop delay p99 ms | max ms |')
    console.log('|---|---|---|---|---|')
    clock.advance(ANON_WINDOW_MS / 4)
    await pass('nothing due (6 hours in)')
    clock.advance(ANON_WINDOW_MS / 4)
    await pass(`the windows of the ${WITH_SITES.toLocaleString('en')} websites end (they go offline)`)
    clock.advance(ANON_WINDOW_MS / 2)
    await pass(`${(CREDENTIALS - WITH_SITES).toLocaleString('en')} windows end at once (no website to act on)`)
    clock.advance(ANON_CLAIM_WINDOW_MS)
    await pass('every claim deadline passes (all expire, websites purged)')
    const expired = store.anonCredentials.get(ids[ids.length - 1])?.state
    if (expired !== 'expired') throw new Error(`the sweep left a credential ${expired}`)
  } finally {
    await services.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
