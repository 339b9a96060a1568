/**
 * npm run bench:startup — start-up and cold sites at the scale of a platform (issue 11): a data
 * directory with BENCH_SITES websites (default 100,000), BENCH_PUBLISHED of them published (default
 * 20,000) with 10 files each, written straight into the store; then `plinth start` on it, measured:
 * time until it answers, its RSS, the first request to cold sites (each its first ever), and RSS
 * after them. Seeding writes records exactly as the actors do (the store validates every read).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { gzipSync } from 'node:zlib'
import { ensureInstallation } from '../actors/installation.js'
import { makeVersion, firstVersion } from '../actors/website/versions.js'
import { systemClock } from '../core/clock.js'
import { sha256 } from '../core/content.js'
import { newId } from '../core/ids.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import { Store } from '../core/store/store.js'
import { rawRequest } from '../test/helpers/http.js'
import { runBenchmark, spawnServer } from './main.js'

const SITES = Number(process.env.BENCH_SITES ?? 100_000)
const PUBLISHED = Number(process.env.BENCH_PUBLISHED ?? 20_000)
const FILES = 10
const COLD_SAMPLES = 500
const PORT = 18591
const ADMIN = 'wb_' + 's'.repeat(43)

async function seed(dir: string): Promise<void> {
  const store = new Store(dir)
  await store.ensureBlobReferences()
  const installation = await ensureInstallation(store, systemClock, ADMIN)
  const actor = { kind: 'api_key' as const, id: 'key_bench', name: 'bench seeding' }
  const now = Date.now()
  // Pages differ per site (so content is not shared), with a few kilobytes of text each.
  const filler = 'Plinth serves this page. '.repeat(80)
  const BATCH = 1000
  for (let start = 0; start < SITES; start += BATCH) {
    const prepared: {
      record: WebsiteRecord
      files: { path: string; bytes: Buffer; hash: string; gzip: Buffer | null; br: Buffer | null }[]
    }[] = []
    for (let i = start; i < Math.min(SITES, start + BATCH); i++) {
      const published = i < PUBLISHED
      const label = `site${i}`
      const files = []
      if (published) {
        for (let f = 0; f < FILES; f++) {
          const path = f === 0 ? 'index.html' : `page${f}.html`
          const bytes = Buffer.from(`<!doctype html><title>${label} ${path}</title><h1>${label}: ${path}</h1><p>${filler}</p>`)
          // gzip only (brotli at its serving quality would make seeding take most of an hour)
          files.push({ path, bytes, hash: sha256(bytes), gzip: gzipSync(bytes), br: null })
        }
      }
      const record: WebsiteRecord = {
        v: 1,
        id: newId('ws'),
        orgId: installation.orgId,
        seq: i + 1,
        name: label,
        kind: 'static',
        slug: label,
        subdomain: label,
        description: null,
        headVersion: published ? 2 : 1,
        publishedVersion: published ? 2 : null,
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
        suspendedAt: null,
        suspendedReason: null,
      }
      prepared.push({ record, files })
    }
    await store.commit(() => {
      for (const { record, files } of prepared) {
        store.websites.put(record.id, record)
        store.putVersion([record.id, 1], firstVersion(record.id, actor, now))
        store.websitesByOrg.put([record.orgId, 'live', record.seq], record.id)
        store.slugs.put([record.orgId, record.slug], record.id)
        store.labels.put(record.subdomain, record.id)
        if (files.length > 0) {
          for (const file of files) store.putContent(file.hash, file.bytes, file)
          const manifest = Object.fromEntries(
            files.map((f) => [f.path, { hash: f.hash, size: f.bytes.length, contentType: 'text/html; charset=utf-8' }]),
          )
          store.putVersion([record.id, 2], makeVersion(record.id, 2, manifest, 'deploy', null, actor, now))
        }
      }
    })
    if ((start / BATCH) % 10 === 0) process.stderr.write(`seeded ${start + prepared.length} of ${SITES}\n`)
  }
  await store.close()
}

/** RSS in MiB, and its parts: anonymous memory (the heap and buffers) and file pages (LMDB's memory map, reclaimable). */
function rss(pid: number): { total: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024
  return { total: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') }
}

const mib = (r: { total: number; anon: number; file: number }) =>
  `${r.total.toFixed(0)} MiB (anonymous ${r.anon.toFixed(0)}, file-backed ${r.file.toFixed(0)})`

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-startup-'))
  try {
    const seeding = performance.now()
    await seed(dir)
    const seeded = performance.now() - seeding
    const started = performance.now()
    // BENCH_NODE_FLAGS (e.g. --trace-gc) go to the server; its output then goes to BENCH_SERVER_LOG.
    const child = await spawnServer(PORT, dir)
    const listening = performance.now() - started
    // The first request answers too (nothing is activated before it).
    const firstAnswer = await rawRequest(PORT, 'site0.localhost', '/')
    const answered = performance.now() - started
    const rssAtStart = rss(child.pid!)
    // Cold sites: each request is the first its site ever gets from this process.
    const cold: number[] = []
    for (let i = 1; i <= COLD_SAMPLES; i++) {
      const label = `site${Math.floor((i * (PUBLISHED - 1)) / COLD_SAMPLES)}`
      const t0 = performance.now()
      const res = await rawRequest(PORT, `${label}.localhost`, '/page3')
      cold.push(performance.now() - t0)
      if (res.status !== 200) throw new Error(`${label} answered ${res.status}`)
    }
    const warm: number[] = []
    for (let i = 1; i <= COLD_SAMPLES; i++) {
      const label = `site${Math.floor((i * (PUBLISHED - 1)) / COLD_SAMPLES)}`
      const t0 = performance.now()
      await rawRequest(PORT, `${label}.localhost`, '/page3')
      warm.push(performance.now() - t0)
    }
    const rssAfter = rss(child.pid!)
    const unknown = await rawRequest(PORT, `site${SITES - 1}.localhost`, '/')
    child.kill('SIGTERM')
    await new Promise((resolve) => child.on('exit', resolve))
    cold.sort((a, b) => a - b)
    warm.sort((a, b) => a - b)
    const rows: [string, string][] = [
      ['websites / published (10 files each)', `${SITES.toLocaleString('en')} / ${PUBLISHED.toLocaleString('en')}`],
      ['seeding the data directory (not part of start-up)', `${(seeded / 1000).toFixed(1)} s`],
      ['spawn until "Plinth listening"', `${listening.toFixed(0)} ms`],
      ['spawn until the first site request answered', `${answered.toFixed(0)} ms (${firstAnswer.status})`],
      ['RSS after start and one request', mib(rssAtStart)],
      [
        `first request to ${COLD_SAMPLES} cold sites: p50 / p99 / max`,
        `${percentile(cold, 0.5).toFixed(2)} / ${percentile(cold, 0.99).toFixed(2)} / ${cold.at(-1)!.toFixed(2)} ms`,
      ],
      [
        `the same ${COLD_SAMPLES} requests again (warm): p50 / p99`,
        `${percentile(warm, 0.5).toFixed(2)} / ${percentile(warm, 0.99).toFixed(2)} ms`,
      ],
      [`RSS after ${COLD_SAMPLES} sites were served`, mib(rssAfter)],
      ['an unpublished site of the last batch', `${unknown.status}`],
    ]
    console.log('\n| measure | result |\n|---|---|')
    for (const [k, v] of rows) console.log(`| ${k} | ${v} |`)
  } finally {
    if (process.env.BENCH_KEEP === undefined) rmSync(dir, { recursive: true, force: true })
    else console.log(`data directory kept: ${dir}`)
  }
}

runBenchmark(main)
