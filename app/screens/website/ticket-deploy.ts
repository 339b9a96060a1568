import { api, ApiError } from '../../api.js'
import type { RuleWarning } from '../../types.js'

/*
 * A folder with files over 1 MiB, deployed as the product's helper deploys one: a ticket from
 * begin_deploy, the large files announced by SHA-256 (the server answers an upload only for content
 * it lacks, and for a file over 100 MiB only the parts still missing), their bytes PUT, then the
 * small files in one multipart request that names the large ones in `uploaded`. A dropped connection
 * is retried: the uploads call says again what is still missing, so nothing is sent twice.
 */

/** Files over this go through the uploads call (the most a file in a deploy's body may be). */
export const LARGE_FILE_BYTES = 1024 * 1024
/** A file over this is sent in parts of this size (the server's part size). */
const PART_BYTES = 100 * 1024 * 1024
/** Tries of the uploads step after a dropped connection, waiting 1, 2, 4, 8 s between them. */
const RETRIES = 5

export interface Picked {
  path: string
  file: File
}

export interface DeployProgress {
  phase: 'hashing' | 'uploading' | 'deploying' | 'retrying'
  /** Bytes of the folder on the server (sent now, or sent before and not sent again). */
  bytesDone: number
  bytesTotal: number
  filesDone: number
  filesTotal: number
  /** The large file being hashed or sent, and how far along. */
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

interface Hashed extends Picked {
  sha256: string
  partSha256?: string[]
}

export async function ticketDeploy(
  websiteId: string,
  picked: Picked[],
  message: string,
  onProgress: (progress: DeployProgress) => void,
): Promise<DeployResult> {
  const large = picked.filter((p) => p.file.size > LARGE_FILE_BYTES)
  const small = picked.filter((p) => p.file.size <= LARGE_FILE_BYTES)
  const progress: DeployProgress = {
    phase: 'hashing',
    bytesDone: 0,
    bytesTotal: picked.reduce((n, p) => n + p.file.size, 0),
    filesDone: 0,
    filesTotal: picked.length,
    current: null,
  }
  const report = () => onProgress({ ...progress, current: progress.current === null ? null : { ...progress.current } })
  const hashed: Hashed[] = []
  for (const p of large) {
    progress.current = { path: p.path, fraction: 0 }
    report()
    hashed.push({ ...p, ...(await digest(p.file, (fraction) => ((progress.current!.fraction = fraction), report()))) })
  }
  progress.current = null

  let ticket = await beginDeploy(websiteId)
  const sent = new Set<string>() // large files whose bytes the server has
  for (let attempt = 0; ; attempt++) {
    try {
      progress.phase = 'uploading'
      const answer = await send<UploadsAnswer>(
        'POST',
        '/public/v1/deploys/uploads',
        ticket,
        JSON.stringify({ files: hashed.map(describe) }),
        {
          'content-type': 'application/json',
        },
      )
      ticket = answer.ticket
      for (const entry of answer.files) {
        const file = hashed.find((h) => h.path === entry.path)!
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

/** The SHA-256 the server names a file by: of its bytes, or over 100 MiB, of its parts' digests in order. */
async function digest(file: File, onProgress: (fraction: number) => void): Promise<{ sha256: string; partSha256?: string[] }> {
  if (globalThis.crypto?.subtle === undefined)
    throw new ApiError(
      0,
      'validation',
      'Files over 1 MiB need the dashboard over HTTPS (the browser hashes them only in a secure context)',
      undefined,
    )
  if (file.size <= PART_BYTES) {
    const sha256 = hex(await crypto.subtle.digest('SHA-256', await file.arrayBuffer()))
    onProgress(1)
    return { sha256 }
  }
  const parts: ArrayBuffer[] = []
  for (let start = 0; start < file.size; start += PART_BYTES) {
    parts.push(await crypto.subtle.digest('SHA-256', await file.slice(start, start + PART_BYTES).arrayBuffer()))
    onProgress(Math.min(1, (start + PART_BYTES) / file.size))
  }
  const joined = new Uint8Array(parts.length * 32)
  parts.forEach((part, i) => joined.set(new Uint8Array(part), i * 32))
  return { sha256: hex(await crypto.subtle.digest('SHA-256', joined)), partSha256: parts.map(hex) }
}

function hex(buffer: ArrayBuffer): string {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('')
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
