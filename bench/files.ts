/**
 * npm run bench:files — shared files (issue 15), through real HTTP on loopback.
 *
 * 1. Upload: one 100 MiB file through the resumable endpoint in one PUT (Content-Range), MiB/s; the
 *    server's RSS sampled every 20 ms during it (growth over its idle RSS); and a small static site's
 *    page fetched every 10 ms meanwhile, its latency p50/p99 against the same fetches with no upload
 *    (serving undisturbed).
 * 2. Download: 8 readers at once, each asking for 8 MiB Range slices of the 100 MiB file in a loop
 *    for 5 s: aggregate GiB/s.
 * 3. Images: a 2400x1600 JPEG asset to 800 px WebP, the first request (sharp resizes it) and the
 *    cached one, 20 each (a new width each time for the first); then wrk (core 1) against the cached
 *    variant and against a static file of the same bytes on the same site, 5 s each, three times
 *    alternating: req/s and their ratio.
 * For the req/s comparison Plinth is pinned to core 0 (every thread of it) and wrk to core 1.
 */
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import sharp from 'sharp'
import { randomBytes } from 'node:crypto'
import { readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { percentile, runBenchmark } from './main.js'

const PORT = 18497
const ADMIN = 'wb_' + 'f'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`
const MiB = 1024 * 1024
const SIZE = 100 * MiB

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(ORIGIN + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

/** One request with a Host header, the body counted and dropped. */
function get(host: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: PORT, path, headers: { host, ...headers }, agent: false }, (res) => {
      let bytes = 0
      res.on('data', (c: Buffer) => (bytes += c.length))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** One GET with a Host header (fetch cannot set Host), the whole body. */
function body(host: string, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: PORT, path, headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${path}: ${res.statusCode}`))))
    })
    req.on('error', reject)
    req.end()
  })
}

function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match === null ? 0 : Number(match[1]) * 1024
}

/** A page of a static site fetched every 10 ms until `stop`; the latencies. */
async function probe(stop: () => boolean): Promise<number[]> {
  const samples: number[] = []
  while (!stop()) {
    const t0 = performance.now()
    await get('page.localhost', '/')
    samples.push(performance.now() - t0)
    await new Promise((r) => setTimeout(r, 10))
  }
  return samples
}

/** PUTs the whole buffer to the upload URL in one request, written in 1 MiB pieces as a client streams it. */
function upload(path: string, bytes: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: PORT,
        method: 'PUT',
        path,
        headers: {
          authorization: `Bearer ${ADMIN}`,
          'content-type': 'application/octet-stream',
          'content-range': `bytes 0-${bytes.length - 1}/${bytes.length}`,
          'content-length': String(bytes.length),
        },
      },
      (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => (res.statusCode === 200 ? resolve(res.statusCode) : reject(new Error(`upload: ${res.statusCode} ${text}`))))
      },
    )
    req.on('error', reject)
    let offset = 0
    const pump = () => {
      while (offset < bytes.length) {
        const piece = bytes.subarray(offset, offset + MiB)
        offset += piece.length
        if (!req.write(piece)) return void req.once('drain', pump)
      }
      req.end()
    }
    pump()
  })
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-files-'))
  const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, 'start'], {
    env: { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  try {
    for (let i = 0; ; i++) {
      try {
        await fetch(ORIGIN + '/')
        break
      } catch {
        if (i > 100) throw new Error('plinth did not start')
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    const page = await api('POST', '/v1/websites', { name: 'page', kind: 'static', subdomain: 'page' })
    await api('POST', `/v1/websites/${page.id}/deploy/json`, {
      files: [{ path: 'index.html', content: '<h1>Still here</h1>'.repeat(100) }],
    })
    await api('POST', `/v1/websites/${page.id}/publish`)
    const share = await api('POST', '/v1/websites', { name: 'share', kind: 'storage', subdomain: 'share' })
    const bytes = randomBytes(SIZE)

    // Serving with nothing else going on.
    let quiet = false
    const idleProbe = probe(() => quiet)
    await new Promise((r) => setTimeout(r, 2000))
    quiet = true
    const idle = await idleProbe

    const begun = await api('POST', `/v1/websites/${share.id}/objects/uploads`, { files: [{ name: 'big.bin', size: SIZE }] })
    const path = new URL(begun.uploads[0].uploadUrl).pathname
    const rssBefore = rssOf(child.pid!)
    let rssMax = rssBefore
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssOf(child.pid!))), 20)
    let uploading = true
    const busyProbe = probe(() => !uploading)
    const t0 = performance.now()
    await upload(path, bytes)
    const seconds = (performance.now() - t0) / 1000
    uploading = false
    clearInterval(sampler)
    const busy = await busyProbe
    const finalized = await api('POST', `/v1/websites/${share.id}/objects/finalize`, { uploadIds: [begun.uploads[0].uploadId] })
    const url = new URL(finalized.objects[0].url)

    // Eight Range readers at once for 5 s.
    const slice = 8 * MiB
    let total = 0
    const until = performance.now() + 5000
    const reader = async (n: number) => {
      for (let i = n; performance.now() < until; i += 8) {
        const start = (i % Math.floor(SIZE / slice)) * slice
        const got = await get('share.localhost', url.pathname, { range: `bytes=${start}-${start + slice - 1}` })
        if (got.status !== 206 || got.bytes !== slice) throw new Error(`range read: ${got.status} ${got.bytes}`)
        total += got.bytes
      }
    }
    const d0 = performance.now()
    await Promise.all(Array.from({ length: 8 }, (_, n) => reader(n)))
    const downloadSeconds = (performance.now() - d0) / 1000

    // Images: first and cached requests, then the cached variant against a static file of its bytes.
    const jpeg = await sharp({
      create: { width: 2400, height: 1600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
    })
      .jpeg({ quality: 85 })
      .toBuffer()
    const form = new FormData()
    form.set('file', new Blob([jpeg], { type: 'image/jpeg' }), 'photo.jpg')
    const asset = (await (
      await fetch(`${ORIGIN}/v1/websites/${page.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: form })
    ).json()) as { id: string }
    const firstMs: number[] = []
    const cachedMs: number[] = []
    for (let i = 0; i < 20; i++) {
      const t1 = performance.now()
      const made = await get('page.localhost', `/_platform/img/${asset.id}?w=${800 + i}&fm=webp`)
      firstMs.push(performance.now() - t1)
      if (made.status !== 200) throw new Error(`resize: ${made.status}`)
      const t2 = performance.now()
      await get('page.localhost', `/_platform/img/${asset.id}?w=${800 + i}&fm=webp`)
      cachedMs.push(performance.now() - t2)
    }
    const variant = await body('page.localhost', `/_platform/img/${asset.id}?w=800&fm=webp`)
    await api('POST', `/v1/websites/${page.id}/deploy/json`, {
      files: [
        { path: 'index.html', content: '<h1>Still here</h1>'.repeat(100) },
        { path: 'same.webp', content: variant.toString('base64'), encoding: 'base64' },
      ],
    })
    await api('POST', `/v1/websites/${page.id}/publish`)
    const script = (path: string) => {
      const file = join(dir, `${path.replace(/\W/g, '_')}.lua`)
      writeFileSync(
        file,
        `request = function() return wrk.format("GET", "${path}", { ["Host"] = "page.localhost", ["Accept-Encoding"] = "gzip, br" }) end\n`,
      )
      return file
    }
    const wrkRun = (file: string) =>
      new Promise<number>((resolve, reject) => {
        const run = spawn('taskset', ['-c', '1', 'wrk', '-t1', '-c50', '-d5s', '-s', file, ORIGIN + '/'])
        let text = ''
        run.stdout.on('data', (c: Buffer) => (text += c.toString()))
        run.on('exit', (code) => {
          if (code !== 0 || /Non-2xx/.test(text)) return reject(new Error(`wrk: ${text}`))
          resolve(Number(/Requests\/sec:\s+([\d.]+)/.exec(text)![1]))
        })
      })
    // From here on Plinth shares one core with nothing else of its own (every thread), wrk has the other.
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(child.pid)], { stdio: 'ignore' })
    const variantScript = script(`/_platform/img/${asset.id}?w=800&fm=webp`)
    const staticScript = script('/same.webp')
    const ratios: number[] = []
    const rows: string[] = []
    for (let rep = 0; rep < 3; rep++) {
      const v = await wrkRun(variantScript)
      const f = await wrkRun(staticScript)
      ratios.push(v / f)
      rows.push(`${Math.round(v).toLocaleString('en')} vs ${Math.round(f).toLocaleString('en')}`)
    }
    ratios.sort((a, b) => a - b)

    console.log(
      `\nUpload of one 100 MiB file in one PUT: ${(SIZE / MiB / seconds).toFixed(0)} MiB/s (${seconds.toFixed(2)} s); server RSS ${(rssBefore / MiB).toFixed(0)} MiB before, at most ${(rssMax / MiB).toFixed(0)} MiB during (+${((rssMax - rssBefore) / MiB).toFixed(0)} MiB)`,
    )
    console.log(
      `A static page fetched every 10 ms: idle p50 ${percentile(idle, 50).toFixed(2)} ms, p99 ${percentile(idle, 99).toFixed(2)} ms (${idle.length}); during the upload p50 ${percentile(busy, 50).toFixed(2)} ms, p99 ${percentile(busy, 99).toFixed(2)} ms (${busy.length})`,
    )
    console.log(
      `Download: 8 readers of 8 MiB Range slices for ${downloadSeconds.toFixed(1)} s: ${(total / 1024 / MiB / downloadSeconds).toFixed(2)} GiB/s aggregate`,
    )
    console.log(
      `Images, a 2400x1600 JPEG (${(jpeg.length / 1024).toFixed(0)} KiB) to 800 px WebP (${(variant.length / 1024).toFixed(0)} KiB): first request p50 ${percentile(firstMs, 50).toFixed(1)} ms, p99 ${percentile(firstMs, 99).toFixed(1)} ms; cached p50 ${percentile(cachedMs, 50).toFixed(2)} ms, p99 ${percentile(cachedMs, 99).toFixed(2)} ms`,
    )
    console.log(
      `The cached variant against a static file of the same bytes, req/s (wrk -c50, 5 s, alternating): ${rows.join('; ')}; ratio median ${ratios[1].toFixed(2)} (min ${ratios[0].toFixed(2)}, max ${ratios[2].toFixed(2)})`,
    )
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
