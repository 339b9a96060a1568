/*
 * The SHA-256 of a deploy's large files, read in a Web Worker so the page stays free to draw its progress
 * and to send the files already read. ticket-deploy.ts loads this module only with import(), so esbuild
 * makes it a chunk of its own (nothing else in the dashboard is in it), and starts that same chunk as a
 * module worker: its address is `workerUrl`. The page's CSP allows it (script-src 'self': a worker's
 * script is one of the dashboard's own files). Loaded in the page, it only lends its functions.
 */

/** A file over this is named by its parts' digests (the server's part size, as in ticket-deploy.ts). */
const PART_BYTES = 100 * 1024 * 1024

/** Where this chunk was loaded from: the script of the worker. */
export const workerUrl = import.meta.url

/** What the server names a file by. */
export interface Digest {
  sha256: string
  partSha256?: string[]
}

/** The worker's messages to the page: a file's progress, its digest, or why reading it failed (the last message). */
export type DigestMessage = { index: number; fraction: number } | { index: number; digest: Digest } | { index: number; error: string }

/**
 * The SHA-256 the server names a file by: of its bytes, or over 100 MiB, of its parts' digests in
 * order. WebCrypto has no SHA-256 to feed piece by piece, so a file up to 100 MiB is read whole (64 MiB:
 * about 0.1 s to read and 0.13 s to hash on the tests' 2-core machine) and a larger one part by part:
 * at most one part is held at a time.
 */
export async function digest(file: Blob, onProgress: (fraction: number) => void): Promise<Digest> {
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

/**
 * Every file's digest, one file after another, each said as soon as it is known. A file that cannot be
 * read (changed or removed since it was dropped) is said, and ends the reading.
 */
export async function digestAll(files: Blob[], say: (message: DigestMessage) => void): Promise<void> {
  for (const [index, file] of files.entries()) {
    try {
      say({ index, digest: await digest(file, (fraction) => say({ index, fraction })) })
    } catch (error) {
      return say({ index, error: (error as Error).message })
    }
  }
}

function hex(buffer: ArrayBuffer): string {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

// Started as a worker (WorkerGlobalScope exists only there): the page posts the files, the worker says
// what it reads.
if ('WorkerGlobalScope' in globalThis) {
  const scope = globalThis as unknown as { onmessage: (event: MessageEvent<Blob[]>) => void; postMessage(message: DigestMessage): void }
  scope.onmessage = (event) => void digestAll(event.data, (message) => scope.postMessage(message))
}
