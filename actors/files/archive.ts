/** Uploaded zip archives: their central directory, read for browsing and for serving entries, and the bounds a zip served from inside must meet. */

import { openPromise as openZip, type Entry, type ZipFile as ArchiveReader } from 'yauzl'
import { ARCHIVE_MAX_ENTRIES, ARCHIVE_MAX_RATIO, ARCHIVE_MAX_UNPACKED_BYTES } from '../../core/limits.js'

export type { ArchiveReader, Entry }

/** Reads an uploaded zip's central directory (at most 65,536 entries); the caller closes the reader. */
export async function openArchive(file: string): Promise<{ zip: ArchiveReader; entries: Entry[] }> {
  const zip = await openZip(file, { lazyEntries: true, autoClose: false, strictFileNames: false, decodeStrings: true })
  const entries: Entry[] = []
  try {
    for await (const entry of zip.eachEntry()) {
      entries.push(entry)
      if (entries.length > ARCHIVE_MAX_ENTRIES) break
    }
  } catch (error) {
    zip.close()
    throw error
  }
  return { zip, entries }
}

const MiB = 1024 * 1024

/**
 * Why a zip may not be served from inside, or null when it may: too many entries, too many bytes
 * once inflated, an entry that inflates past the ratio (a zip bomb), encryption, or a method other
 * than stored and deflate. The sizes are the central directory's; yauzl refuses an entry whose bytes
 * inflate to anything else, so they bound the work of serving it.
 */
export function archiveProblem(entries: Entry[], entryCount: number): string | null {
  if (entryCount > ARCHIVE_MAX_ENTRIES || entries.length > ARCHIVE_MAX_ENTRIES)
    return `The zip holds ${entryCount} entries; a folder served from a zip holds at most ${ARCHIVE_MAX_ENTRIES}. Split it into several zips.`
  let total = 0
  for (const entry of entries) {
    if ((entry.generalPurposeBitFlag & 0x1) !== 0)
      return `${entry.fileName} is encrypted; zips served as folders must not be encrypted (use a password on the folder instead).`
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8)
      return `${entry.fileName} uses compression method ${entry.compressionMethod}; only stored and deflate entries can be served. Zip it again with the defaults.`
    total += entry.uncompressedSize
    if (entry.uncompressedSize > MiB && entry.uncompressedSize > ARCHIVE_MAX_RATIO * Math.max(entry.compressedSize, 1))
      return `${entry.fileName} inflates from ${entry.compressedSize} to ${entry.uncompressedSize} bytes, more than ${ARCHIVE_MAX_RATIO} times: refused as a zip bomb. Share the file itself instead.`
  }
  if (total > ARCHIVE_MAX_UNPACKED_BYTES)
    return `The zip's files add up to ${total} bytes once unpacked; a folder served from a zip holds at most ${ARCHIVE_MAX_UNPACKED_BYTES} (4 GiB).`
  return null
}

/** A zip's entries and whether it may be served from inside; null when the file is not a readable zip. */
export async function inspectArchive(file: string): Promise<{ entries: Entry[]; problem: string | null } | null> {
  const opened = await openArchive(file).catch(() => null)
  if (opened === null) return null
  const { zip, entries } = opened
  zip.close()
  return { entries, problem: archiveProblem(entries, zip.entryCount) }
}

/** How many files (not folders) a readable zip holds; 0 when it is not one. */
export async function archiveFileCount(file: string): Promise<number> {
  const inspected = await inspectArchive(file)
  return inspected === null ? 0 : inspected.entries.filter((e) => !e.fileName.endsWith('/')).length
}

/**
 * Reads an entry through, checking its bytes against the central directory (the one record of its size
 * the bounds above trust): yauzl counts what it inflates and fails at the first chunk past the declared
 * size, so a lie costs at most that, or at an end short of it; zlib fails on a broken deflate stream.
 * `keep` collects the bytes (the caller bounds the entry's size). Null when the entry is what the zip
 * says; otherwise why not, as the rest of a sentence about it ("says it holds 1000 bytes but inflates
 * to more"). Errors of the disk are thrown, not described.
 */
export async function readEntry(zip: ArchiveReader, entry: Entry, keep?: Buffer[]): Promise<string | null> {
  try {
    const stream = await zip.openReadStreamPromise(entry)
    for await (const chunk of stream as AsyncIterable<Buffer>) keep?.push(chunk)
    return null
  } catch (error) {
    const code = (error as NodeJS.ErrnoException)?.code
    if (typeof code === 'string' && !code.startsWith('Z_')) throw error
    const message = (error as Error)?.message ?? String(error)
    if (message.startsWith('too many bytes in the stream')) return `says it holds ${entry.uncompressedSize} bytes but inflates to more`
    const fewer = /^not enough bytes in the stream\. expected \d+\. got only (\d+)/.exec(message)
    if (fewer !== null) return `says it holds ${entry.uncompressedSize} bytes but inflates to ${fewer[1]}`
    return `cannot be unpacked (${message})`
  }
}

/**
 * The first entry of a zip whose bytes are not what its central directory says, and why (as
 * `readEntry` words it); null when every entry reads true. Reads every entry through once, within
 * the bounds `archiveProblem` checked first.
 */
export async function damagedEntry(file: string): Promise<{ entry: string; why: string } | null> {
  const { zip, entries } = await openArchive(file)
  try {
    for (const entry of entries) {
      if (entry.fileName.endsWith('/')) continue
      const why = await readEntry(zip, entry)
      if (why !== null) return { entry: entry.fileName, why }
    }
    return null
  } finally {
    zip.close()
  }
}
