// Files written so that a crash leaves either the whole file or none of it.
import { open, rename } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Worker } from 'node:worker_threads'

/** fsyncs a directory, so a rename or a new file in it survives a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** fsyncs a file's bytes. */
export async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Writes `text` to `path` through a temporary file: fsynced, renamed over, the directory fsynced. */
export async function writeFileDurably(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`
  const handle = await open(temporary, 'w', 0o600)
  try {
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temporary, path)
  await syncDirectory(dirname(path))
}

/**
 * SHA-256 and size of a file, read on a worker thread: the hash runs on a core of its own, and its
 * reads never wait in libuv's thread pool behind the copies the caller makes meanwhile.
 */
export function sha256FileAside(path: string): Promise<{ sha256: string; size: number }> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { openSync, readSync, closeSync } = require('node:fs')
    const hash = require('node:crypto').createHash('sha256')
    const buffer = Buffer.allocUnsafe(1 << 22)
    const fd = openSync(workerData, 'r')
    let size = 0
    for (let n; (n = readSync(fd, buffer, 0, buffer.length, null)) > 0; size += n) hash.update(buffer.subarray(0, n))
    closeSync(fd)
    parentPort.postMessage({ sha256: hash.digest('hex'), size })`
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: path })
    worker.once('message', resolve)
    worker.once('error', reject)
  })
}
