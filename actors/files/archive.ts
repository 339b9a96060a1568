/** Uploaded zip archives: their central directory, read for browsing and for serving entries. */

import { openPromise as openZip, type Entry, type ZipFile as ArchiveReader } from 'yauzl'

export type { ArchiveReader }

/** Reads an uploaded zip's central directory (at most 65,536 entries); the caller closes the reader. */
export async function openArchive(file: string): Promise<{ zip: ArchiveReader; entries: Entry[] }> {
  const zip = await openZip(file, { lazyEntries: true, autoClose: false, strictFileNames: false, decodeStrings: true })
  const entries: Entry[] = []
  try {
    for await (const entry of zip.eachEntry()) {
      entries.push(entry)
      if (entries.length >= 65_536) break
    }
  } catch (error) {
    zip.close()
    throw error
  }
  return { zip, entries }
}
