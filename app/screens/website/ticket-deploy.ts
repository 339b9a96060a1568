import { api, ApiError } from '../../api.js'
import type { RuleWarning } from '../../types.js'
import type { Picked } from '../../ui/dropped.js'
import type { Digest, DigestMessage } from './digest.worker.js'

/*
 * A folder with files over 1 MiB, deployed as the product's helper deploys one: a ticket from
 * begin_deploy, the large files announced by SHA-256 (the server answers an upload only for content
 * it lacks, and for a file over 100 MiB only the parts still missing), their bytes PUT, then the
 * small files in one multipart request that names the large ones in `uploaded`. The files are read
 * (hashed) in a worker, smallest first, and each is announced and sent as soon as it is read while
 * the worker reads the next: the first byte goes out after the first file is read, not the whole
 * folder. A dropped connection is retried: the uploads call says again what is still missing, so
 * nothing is sent twice.
 */

/** Files over this go through the uploads call (the most a file in a deploy's body may be). */
export const LARGE_FILE_BYTES = 1024 * 1024
/** A file over this is sent in parts of this size (the server's part size). */
const PART_BYTES = 100 * 1024 * 1024
/** Tries of the uploads step after a dropped connection, waiting 1, 2, 4, 8 s between them. */
const RETRIES = 5

export interface DeployProgress {
  /** `reading`: no file read yet, nothing to send; then what is being sent. */
  phase: 'reading' | 'uploading' | 'deploying' | 'retrying'
  /** The large files read so far while some are left to read (null once all are). */
  reading: { filesDone: number; filesTotal: number; bytesDone: number; bytesTotal: number } | null
  /** Bytes of the folder on the server (sent now, or sent before and not sent again). */
  bytesDone: number
  bytesTotal: number
  filesDone: number
  filesTotal: number
  /** The large file being sent, and how far along. */
  current: { path: string; fraction: number } | null
}

export interface DeployResult {
  version: number
  changed: boolean
  warnings: RuleWarning[]
}

interface Target {
  url: string
  headers: Record<string, string>
}

interface UploadsAnswer {
  ticket: string
  files: {
    path: string
    hash: string
    upload?: Target
    parts?: (Target & { partNumber: number; size: number })[]
    partSize?: number
  }[]
}

interface Hashed extends Picked, Digest {}

export async function ticketDeploy(
  websiteId: string,
  picked: Picked[],
  message: string,
  onProgress: (progress: DeployProgress) => void,
): Promise<DeployResult> {
  if (globalThis.crypto?.subtle === undefined)
    throw new ApiError(
      0,
      'validation',
      'Files over 1 MiB need the dashboard over HTTPS (the browser hashes them only in a secure context)',
      undefined,
    )
  // Smallest first: the sooner a file is read, the sooner its bytes go.
  const large = picked.filter((p) => p.file.size > LARGE_FILE_BYTES).sort((a, b) => a.file.size - b.file.size)
  const small = picked.filter((p) => p.file.size <= LARGE_FILE_BYTES)
  const progress: DeployProgress = {
    phase: 'reading',
    reading: { filesDone: 0, filesTotal: large.length, bytesDone: 0, bytesTotal: large.reduce((n, p) => n + p.file.size, 0) },
    bytesDone: 0,
    bytesTotal: picked.reduce((n, p) => n + p.file.size, 0),
    filesDone: 0,
    filesTotal: picked.length,
    current: null,
  }
  const report = () =>
    onProgress({
      ...progress,
      reading: progress.reading === null ? null : { ...progress.reading },
      current: progress.current === null ? null : { ...progress.current },
    })
  report()

  // The ticket is asked for while the first file is read.
  const firstTicket = beginDeploy(websiteId)
  firstTicket.catch(() => undefined) // awaited below; not unhandled if the deploy stops before
  const hashed: Hashed[] = [] // large files read, in the order read
  const sent = new Set<string>() // large files whose bytes the server has
  let unreadable: ApiError | null = null
  let wake = () => {}
  let readBytes = 0
  const reader = readDigests(
    large.map((p) => p.file),
    (said) => {
      const reading = progress.reading
      if (reading === null) return
      const { path, file } = large[said.index]
      if ('error' in said)
        unreadable = new ApiError(0, 'validation', `${path} could not be read (${said.error}); drop the folder again`, undefined)
      else if ('fraction' in said) reading.bytesDone = readBytes + said.fraction * file.size
      else {
        hashed.push({ ...large[said.index], ...said.digest })
        readBytes += file.size
        reading.filesDone = hashed.length
        reading.bytesDone = readBytes
        if (hashed.length === large.length) progress.reading = null
      }
      report()
      wake()
    },
    (error) => ((unreadable = error), wake()),
  )
  /** The large files read and not sent yet; waits for the next one read when there are none. */
  const unsent = async (): Promise<Hashed[]> => {
    for (;;) {
      if (unreadable !== null) throw unreadable
      const ready = hashed.filter((h) => !sent.has(h.path))
      if (ready.length > 0) return ready
      await new Promise<void>((resolve) => (wake = resolve))
    }
  }

  let ticket: string | null = null
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        ticket ??= await firstTicket
        while (sent.size < large.length) {
          const files = await unsent()
          progress.phase = 'uploading'
          report()
          // Typed here: `ticket` is written from the answer, which TypeScript cannot infer around.
          const answer: UploadsAnswer = await send(
            'POST',
            '/public/v1/deploys/uploads',
            ticket,
            JSON.stringify({ files: files.map(describe) }),
            {
              'content-type': 'application/json',
            },
          )
          ticket = answer.ticket
          for (const entry of answer.files) {
            const file = files.find((h) => h.path === entry.path)!
            const pending = entry.upload !== undefined ? [{ ...entry.upload, start: 0, size: file.file.size }] : []
            for (const part of entry.parts ?? []) pending.push({ ...part, start: (part.partNumber - 1) * (entry.partSize ?? PART_BYTES) })
            if (pending.length === 0) {
              // Sent before (now or in an earlier deploy): nothing to send.
              if (!sent.has(file.path)) (sent.add(file.path), (progress.bytesDone += file.file.size), progress.filesDone++)
              continue
            }
            // Parts that arrived before this try count as done.
            const already = file.file.size - pending.reduce((n, p) => n + p.size, 0)
            let done = already
            for (const piece of pending) {
              progress.current = { path: file.path, fraction: done / file.file.size }
              report()
              const base = progress.bytesDone
              await send('PUT', piece.url, null, file.file.slice(piece.start, piece.start + piece.size), piece.headers, (loaded) => {
                progress.current = { path: file.path, fraction: (done + loaded) / file.file.size }
                progress.bytesDone = base + loaded
                report()
              })
              progress.bytesDone = base + piece.size
              done += piece.size
            }
            progress.bytesDone += already
            sent.add(file.path)
            progress.filesDone++
            progress.current = null
            report()
          }
        }
        progress.phase = 'deploying'
        report()
        const form = new FormData()
        for (const { path, file } of small) form.append('files', file, path)
        form.append('uploaded', JSON.stringify(hashed.map((h) => ({ path: h.path, size: h.file.size, sha256: h.sha256 }))))
        form.append('message', message)
        const smallBytes = small.reduce((n, p) => n + p.file.size, 0)
        const base = progress.bytesDone
        const result = await send<DeployResult>('POST', '/public/v1/deploys', ticket, form, {}, (loaded, total) => {
          progress.bytesDone = base + Math.min(smallBytes, (loaded / total) * smallBytes)
          report()
        })
        progress.bytesDone = progress.bytesTotal
        progress.filesDone = progress.filesTotal
        report()
        return result
      } catch (caught) {
        const error = caught as ApiError
        const dropped = error.kind === 'network'
        const stale = error.status === 401 || (error.status === 409 && error.details?.expectedHeadVersion !== undefined)
        if ((!dropped && !stale) || attempt >= RETRIES) throw error
        // The connection dropped (wait, then ask again what is missing), or the ticket ran out (a new one).
        progress.phase = 'retrying'
        progress.current = null
        report()
        if (dropped) await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** attempt))
        ticket = await beginDeploy(websiteId)
        progress.bytesDone = [...sent].reduce((n, path) => n + hashed.find((h) => h.path === path)!.file.size, 0)
        progress.filesDone = sent.size
      }
    }
  } finally {
    reader.stop()
  }
}

/**
 * Reads the files' digests in a worker (digest.worker.ts), in order, saying each message as it comes;
 * `fail` when the reading cannot start at all. Where no worker starts (a stricter Content-Security-Policy
 * in front of the dashboard, say), they are read in the page instead: the deploy still goes through.
 */
function readDigests(files: File[], say: (message: DigestMessage) => void, fail: (error: ApiError) => void): { stop(): void } {
  let worker: Worker | null = null
  let stopped = false
  import('./digest.worker.js').then(
    ({ workerUrl, digestAll }) => {
      if (stopped) return
      const inPage = (why: string) => {
        console.error(`The deploy reads its files in the page: its worker did not start (${why})`)
        void digestAll(files, (message) => !stopped && say(message))
      }
      try {
        worker = new Worker(workerUrl, { type: 'module', name: 'deploy digests' })
      } catch (error) {
        return inPage((error as Error).message)
      }
      let read = 0 // files whose digest came
      worker.onmessage = (event: MessageEvent<DigestMessage>) => {
        if ('digest' in event.data) read = event.data.index + 1
        say(event.data)
      }
      worker.onerror = (event) => {
        event.preventDefault()
        worker?.terminate()
        if (read === 0) inPage(event.message || 'it did not load')
        else if (read < files.length) say({ index: read, error: event.message })
      }
      worker.postMessage(files)
    },
    // Not 'network': a retry would not bring the file back (a dashboard updated since this page loaded, say).
    () => fail(new ApiError(0, 'internal', 'The dashboard could not load its file reader: reload the page and deploy again', undefined)),
  )
  return {
    stop() {
      stopped = true
      worker?.terminate()
    },
  }
}

async function beginDeploy(websiteId: string): Promise<string> {
  return (await api<{ ticket: string }>('POST', `/v1/websites/${websiteId}/deploy/tickets`)).ticket
}

function describe(file: Hashed) {
  return {
    path: file.path,
    size: file.file.size,
    sha256: file.sha256,
    ...(file.partSha256 === undefined ? {} : { partSha256: file.partSha256 }),
  }
}

/** One request with a ticket or an upload token (never the session), its upload's progress reported. */
function send<T = unknown>(
  method: string,
  url: string,
  ticket: string | null,
  body: XMLHttpRequestBodyInit,
  headers: Record<string, string>,
  onProgress?: (loaded: number, total: number) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open(method, url)
    xhr.setRequestHeader('accept', 'application/json')
    if (ticket !== null) xhr.setRequestHeader('authorization', `Bearer ${ticket}`)
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value)
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress?.(event.loaded, event.total)
    }
    xhr.onload = () => {
      let answer: any = null
      try {
        answer = JSON.parse(xhr.responseText)
      } catch {
        answer = null
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(answer as T)
      else
        reject(
          new ApiError(xhr.status, answer?.kind ?? 'internal', answer?.message ?? `The server answered ${xhr.status}`, answer?.details),
        )
    }
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The connection dropped; trying again', undefined))
    xhr.send(body)
  })
}
