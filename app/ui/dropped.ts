/** A file with its path inside what was dropped or picked (`site/css/a.css`; a file on its own: its name). */
export interface Picked {
  path: string
  file: File
}

/**
 * Every file of a drop, with its path: a dropped folder walked through the File System entries API
 * (webkitGetAsEntry, in every current browser), its files under its name. The entries are taken at
 * once, before anything is awaited: a drop's items can be read only while its event is handled.
 */
export function droppedFiles(transfer: DataTransfer): Promise<Picked[]> {
  const items = [...transfer.items].filter((item) => item.kind === 'file')
  // An item with no entry (a file made by a script rather than dragged from disk) is taken as the file it holds.
  const taken = items.map((item) => item.webkitGetAsEntry() ?? item.getAsFile())
  return Promise.all(
    taken.map(async (entry) => (entry === null ? [] : entry instanceof File ? [{ path: entry.name, file: entry }] : filesOf(entry))),
  ).then((lists) => lists.flat())
}

/** Every file under an entry, with its path from the top of the drop (the entry's fullPath, less its first slash). */
async function filesOf(entry: FileSystemEntry): Promise<Picked[]> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject))
    return [{ path: entry.fullPath.replace(/^\/+/, ''), file }]
  }
  const reader = (entry as FileSystemDirectoryEntry).createReader()
  const out: Picked[] = []
  // readEntries answers at most 100 at a time: read until it answers none.
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject))
    if (batch.length === 0) return out
    for (const child of batch) out.push(...(await filesOf(child)))
  }
}
