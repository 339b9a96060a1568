// Files written so that a crash leaves either the whole file or none of it.
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { copyFile, open, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'

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
 * Copies `from` to `to` through a temporary file beside it (the kernel copies: copy_file_range or a
 * reflink where the file system has one), fsynced and renamed into place; a crash leaves no partial `to`.
 */
export async function copyFileDurably(from: string, to: string): Promise<void> {
  const temporary = `${to}.tmp-${process.pid}`
  try {
    await copyFile(from, temporary)
    await syncFile(temporary)
    await rename(temporary, to)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

/** SHA-256 (hex) and size of a file, read as a stream in 1 MiB chunks. */
export async function sha256File(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return { sha256: hash.digest('hex'), size }
}
