import { createReadStream } from 'node:fs'
import { ZipFile } from 'yazl'
import type { Registry } from '../../actors/registry.js'
import { archiveProblem, inspectArchive, openArchive, readEntry, type ArchiveReader, type Entry } from '../../actors/files/archive.js'
import type { Channel } from '../../actors/website/snapshot.js'
import { withCharset } from '../../core/content-type.js'
import { ApiError, errorBody } from '../../core/errors.js'
import { STORAGE_ZIP_MAX_FILES } from '../../core/limits.js'
import { formatBytes } from '../../core/text.js'
import type { Logger } from '../../core/log.js'
import type { StorageObjectRecord } from '../../core/schemas/storage.js'
import { contentTypeFor } from '../../core/content-type.js'
import { parseRange } from '../range.js'
import { PASSWORD_PATH, type PasswordDoor } from './password.js'
import type { Exchange, Headers } from '../uws.js'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c])
const encodePath = (segments: string[]) => segments.map(encodeURIComponent).join('/')

/** `filename*=` of RFC 6266 (any characters), with a plain ASCII `filename=` beside it. */
/**
 * How a shared file opens: images, video, audio, PDF and plain text are shown in the browser (under
 * the sandbox CSP); everything else (archives, binaries, HTML, office files) downloads, as the
 * product's skill tells people. `?download` makes any file a download.
 */
function openedAs(download: boolean, contentType: string): 'inline' | 'attachment' {
  if (download) return 'attachment'
  const type = contentType.split(';')[0].trim().toLowerCase()
  return /^(image|video|audio)\//.test(type) || type === 'application/pdf' || type === 'text/plain' ? 'inline' : 'attachment'
}

function disposition(kind: 'inline' | 'attachment', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

/**
 * Entries up to this size are read whole before they are sent (one pass, checked on the way); larger
 * ones are read through once to be checked, then streamed, which costs a second inflate the first time.
 */
const ENTRY_WHOLE_MAX_BYTES = 1 << 20

const PAGE_HEADERS: Headers = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-robots-tag': 'noindex',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
}

const page = (title: string, body: string) =>
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
  `<title>${escape(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse;width:100%}td{padding:.3rem .4rem;border-bottom:1px solid #d0d7de}td.n{text-align:right;white-space:nowrap;color:#57606a}a{color:#0969da}</style></head><body><main>${body}</main></body></html>`

/** A folder's page: its subfolders, its files with sizes and download links, and Download all. */
function listingPage(
  title: string,
  folders: { name: string; label?: string | null }[],
  files: { name: string; size: number; label?: string }[],
  zipHref: string,
): string {
  const rows = [
    ...folders.map(
      (f) =>
        `<tr><td><a href="${escape(encodeURIComponent(f.name))}/">${escape(f.label ?? f.name)}/</a></td><td class="n">folder</td><td></td></tr>`,
    ),
    ...files.map(
      (o) =>
        `<tr><td><a href="${escape(encodeURIComponent(o.name))}">${escape(o.label ?? o.name)}</a></td><td class="n">${formatBytes(o.size)}</td><td class="n"><a href="${escape(encodeURIComponent(o.name))}?download">download</a></td></tr>`,
    ),
  ]
  const total = files.reduce((sum, o) => sum + o.size, 0)
  const body =
    `<h1>${escape(title)}</h1><p><a href="../">↑ Up</a></p>` +
    `<p><a href="${escape(zipHref)}">Download all (zip)</a> · ${files.length} file${files.length === 1 ? '' : 's'}${folders.length === 0 ? '' : `, ${folders.length} folder${folders.length === 1 ? '' : 's'}`}, ${formatBytes(total)}</p><table>${rows.join('')}</table>`
  return page(title, body)
}

/**
 * A storage website's host (issue 15): every shared file at `/<folder>/<name>` (Range, ETag,
 * `?download` for an attachment), every folder at `/<folder>/` (a page of its files and folders with a
 * download-all zip at `?zip`, streamed with yazl), and an uploaded zip browsable as a folder at
 * `/<folder>/<archive.zip>/` with its entries served from the central directory (yauzl). Files are
 * streamed from the blob directory with backpressure; nothing is held whole in memory.
 */
export class SharingPlane {
  /** Zips' directories and whether they may be served from inside, by content hash (bounded). */
  readonly #archives = new Map<string, Awaited<ReturnType<typeof inspectArchive>>>()
  /** Large entries read through and found true (null) or not (why), by zip content hash (bounded as above), then entry name. */
  readonly #checked = new Map<string, Map<string, string | null>>()

  constructor(
    private readonly registry: Registry,
    private readonly log: Logger,
    private readonly password: PasswordDoor,
  ) {}

  serve(exchange: Exchange, channel: Channel): void {
    // A protected folder's password form posts here (the site's own is taken before the sharing plane).
    if (exchange.method === 'POST' && exchange.path === PASSWORD_PATH) return this.password.post(exchange, channel)
    if (exchange.method !== 'GET' && exchange.method !== 'HEAD')
      return exchange.send(
        405,
        { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' },
        'Shared files are read with GET and HEAD; upload through the API (POST /v1/websites/{id}/objects/uploads)\n',
      )
    let segments: string[]
    try {
      segments = exchange.path.split('/').slice(1).map(decodeURIComponent)
    } catch {
      return this.#notFound(exchange)
    }
    const query = new URLSearchParams(exchange.query)
    const headers = { range: exchange.header('range'), ifNoneMatch: exchange.header('if-none-match'), ifRange: exchange.header('if-range') }
    const websiteId = channel.websiteId
    const files = this.registry.files
    const isFolder = segments[segments.length - 1] === ''
    const parts = isFolder ? segments.slice(0, -1) : segments
    // A segment is one name: an encoded slash (%2F) inside one would name a path its folders' passwords never see.
    if (parts.some((s) => s === '' || s === '.' || s === '..' || s.includes('/') || s.includes('\\'))) return this.#notFound(exchange)
    // A folder behind a password (set_folder_password): its pages, files and zip let in only a visitor
    // with its cookie or Basic credentials, and a protected folder inside it asks for its own as well.
    const passwords = this.registry.sitePasswords
    for (const locked of passwords.lockedFolders(channel.websiteId, parts)) {
      const admitted = passwords.admits(locked, exchange.header('cookie'), exchange.header('authorization'))
      if (admitted !== true)
        return this.password.handle(
          exchange,
          channel,
          admitted,
          () => this.serve(exchange, channel),
          locked.slice(channel.websiteId.length + 1),
        )
    }
    exchange.detach()
    // A folder made from a zip sent with archive: true: everything under it is served from inside the zip.
    const archived = parts.length > 0 ? files.archiveOf(websiteId, parts[0]!) : null
    if (archived !== null) {
      const file = this.registry.reads.files.path(archived.hash)
      return void this.#inArchive(exchange, archived, file, parts, isFolder, query).catch((error) => this.#failed(exchange, error))
    }
    if (isFolder) {
      const folder = parts.join('/')
      // The site's own address lists nothing: every folder's name ends in an unguessable suffix, and a
      // listing (or a zip) of the top level would give them all away.
      if (folder === '') return this.#rootPage(exchange, websiteId)
      // A zip that was uploaded, browsed as a folder.
      const archive = parts.length > 0 ? files.byPath(websiteId, parts.slice(0, -1).join('/'), parts[parts.length - 1]) : null
      if (archive !== null && /\.zip$/i.test(archive.object.name))
        return void this.#archivePage(exchange, archive.object, archive.file, parts).catch((error) => this.#failed(exchange, error))
      if (query.has('zip')) return void this.#zip(exchange, websiteId, folder, parts).catch((error) => this.#failed(exchange, error))
      return this.#folderPage(exchange, websiteId, folder, parts)
    }
    const name = parts[parts.length - 1]
    const folder = parts.slice(0, -1).join('/')
    const served = files.byPath(websiteId, folder, name)
    if (served !== null)
      return void this.#file(exchange, served.object, served.file, headers, query.has('download')).catch((error) =>
        this.#failed(exchange, error),
      )
    // A folder named without its slash: there.
    if ([...files.tree(websiteId, parts.join('/'), 1)].length > 0)
      return exchange.send(301, { location: `/${encodePath(parts)}/`, 'cache-control': 'no-cache' })
    // An entry inside an uploaded zip: the longest leading path that is a .zip file.
    for (let i = parts.length - 1; i >= 1; i--) {
      const zipName = parts[i - 1]
      if (!/\.zip$/i.test(zipName)) continue
      const archive = files.byPath(websiteId, parts.slice(0, i - 1).join('/'), zipName)
      if (archive !== null)
        return void this.#entry(
          exchange,
          archive.object,
          archive.file,
          parts.slice(i).join('/'),
          query.has('download'),
          `/${encodePath(parts.slice(0, i))}?download`,
        ).catch((error) => this.#failed(exchange, error))
    }
    this.#notFound(exchange)
  }

  #notFound(exchange: Exchange): void {
    exchange.send(
      404,
      PAGE_HEADERS,
      page('Not found', '<h1>Not found</h1><p>There is no shared file or folder at this address. It may have expired or been deleted.</p>'),
    )
  }

  #failed(exchange: Exchange, error: unknown): void {
    this.log.error('serving a shared file failed', { path: exchange.path, error: (error as Error)?.stack ?? String(error) })
    if (!exchange.responded)
      exchange.send(
        500,
        { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
        'This file could not be read; try again later.\n',
      )
  }

  async #file(
    exchange: Exchange,
    object: StorageObjectRecord,
    file: string,
    request: { range: string; ifNoneMatch: string; ifRange: string },
    download: boolean,
  ): Promise<void> {
    const etag = `"${object.hash.slice(0, 32)}"`
    const base: Headers = {
      'content-type': withCharset(object.contentType),
      etag,
      'accept-ranges': 'bytes',
      'cache-control': this.#cacheControl(object.websiteId, object.folder),
      'content-disposition': disposition(openedAs(download, object.contentType), object.name),
      'x-content-type-options': 'nosniff',
      // A shared HTML or SVG file is shown, never run: no script of it on this origin.
      'content-security-policy': 'sandbox',
      'x-robots-tag': 'noindex',
    }
    if (request.ifNoneMatch !== '' && (request.ifNoneMatch.includes(etag) || request.ifNoneMatch.trim() === '*'))
      return exchange.send(304, { etag, 'cache-control': base['cache-control'] })
    if (request.range !== '' && (request.ifRange === '' || request.ifRange.includes(etag))) {
      const range = parseRange(request.range, object.size)
      if (range === 'unsatisfiable') return exchange.send(416, { 'content-range': `bytes */${object.size}`, 'cache-control': 'no-store' })
      if (range !== null) {
        const [start, end] = range
        return exchange.sendStream(
          206,
          { ...base, 'content-range': `bytes ${start}-${end}/${object.size}` },
          createReadStream(file, { start, end, highWaterMark: 256 * 1024 }),
          end - start + 1,
        )
      }
    }
    await exchange.sendStream(200, base, createReadStream(file, { highWaterMark: 256 * 1024 }), object.size)
  }

  #rootPage(exchange: Exchange, websiteId: string): void {
    const title = this.registry.reads.websites.get(websiteId)?.name ?? 'Shared files'
    exchange.send(
      200,
      PAGE_HEADERS,
      page(
        title,
        `<h1>${escape(title)}</h1><p>Files shared here are reached by their own links; ask the person who shared them for the link.</p>`,
      ),
    )
  }

  #folderPage(exchange: Exchange, websiteId: string, folder: string, parts: string[]): void {
    const files = this.registry.files
    const listing = files.list(websiteId, folder, { limit: 1000 })
    if (listing.items.length === 0 && listing.folders.length === 0) return this.#notFound(exchange)
    exchange.send(
      200,
      PAGE_HEADERS,
      listingPage(
        files.folderLabel(websiteId, folder) ?? parts[parts.length - 1]!,
        listing.folders.map((name) => ({ name, label: files.folderLabel(websiteId, `${folder}/${name}`) })),
        listing.items.map((o) => ({ name: o.name, size: o.size, label: o.label })),
        '?zip',
      ),
    )
  }

  async #zip(exchange: Exchange, websiteId: string, folder: string, parts: string[]): Promise<void> {
    // A protected folder under this one keeps its files out of this zip (its own zip needs its password).
    const passwords = this.registry.sitePasswords
    const admitted = passwords.lockedFolders(websiteId, parts).length
    const objects = [...this.registry.files.tree(websiteId, folder, STORAGE_ZIP_MAX_FILES)].filter(
      (o) => passwords.lockedFolders(websiteId, o.folder.split('/')).length === admitted,
    )
    if (objects.length === 0) return this.#notFound(exchange)
    const zip = new ZipFile()
    const prefix = folder === '' ? '' : `${folder}/`
    // Stored, not compressed: shared files are mostly media, and the size is known up front.
    for (const object of objects) {
      const file = this.registry.reads.files.path(object.hash)
      zip.addReadStreamLazy(
        `${object.folder === '' ? '' : `${object.folder}/`}${object.name}`.slice(prefix.length),
        { compress: false, size: object.size, mtime: new Date(object.createdAt) },
        (cb) => cb(null, createReadStream(file)),
      )
    }
    // yazl calls back with the archive's size (its typings say no argument).
    const size = await new Promise<number>((resolve) =>
      (zip.end as unknown as (options: object, done: (total: number) => void) => void)({}, resolve),
    )
    const name = `${parts.length === 0 ? (this.registry.reads.websites.get(websiteId)?.subdomain ?? 'files') : parts[parts.length - 1]}.zip`
    const headers: Headers = {
      'content-type': 'application/zip',
      'content-disposition': disposition('attachment', name),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    }
    await exchange.sendStream(
      200,
      headers,
      zip.outputStream as unknown as AsyncIterable<Uint8Array> & { destroy(): void },
      size >= 0 ? size : null,
    )
  }

  /** A zip's entries, or the page that says why it is not served from inside (not a zip, or out of the bounds). */
  async #inspect(exchange: Exchange, object: StorageObjectRecord, file: string, download: string): Promise<Entry[] | null> {
    // A zip's directory is read once and kept (by content hash, the 32 most recent): an archive
    // folder of 65,535 entries is not parsed again for every page and file of it.
    let inspected = this.#archives.get(object.hash)
    if (inspected === undefined) {
      inspected = await inspectArchive(file)
      if (this.#archives.size >= 32) this.#archives.delete(this.#archives.keys().next().value!)
      this.#archives.set(object.hash, inspected)
    }
    if (inspected !== null && inspected.problem === null) return inspected.entries
    const why = inspected === null ? 'This file is not a readable zip archive.' : `This zip is not shown as a folder: ${inspected.problem}`
    exchange.send(
      422 as number,
      PAGE_HEADERS,
      page(
        'Not shown as a folder',
        `<h1>${escape(object.name)}</h1><p>${escape(why)} <a href="${escape(download)}">Download it</a> instead.</p>`,
      ),
    )
    return null
  }

  /** A shared zip browsed as a folder at `/<folder>/<archive.zip>/`. */
  async #archivePage(exchange: Exchange, object: StorageObjectRecord, file: string, parts: string[]): Promise<void> {
    const entries = await this.#inspect(exchange, object, file, `../${encodeURIComponent(object.name)}?download`)
    if (entries === null) return
    const rows = entries
      .filter((e) => !e.fileName.endsWith('/'))
      .map(
        (e) =>
          `<tr><td><a href="${escape(encodePath(e.fileName.split('/')))}">${escape(e.fileName)}</a></td><td class="n">${formatBytes(e.uncompressedSize)}</td></tr>`,
      )
    const title = parts[parts.length - 1]!
    exchange.send(
      200,
      PAGE_HEADERS,
      page(
        title,
        `<h1>${escape(title)}</h1><p><a href="../">↑ Up</a> · <a href="../${escape(encodeURIComponent(object.name))}?download">Download the archive</a> (${formatBytes(object.size)})</p><table>${rows.join('')}</table>`,
      ),
    )
  }

  /**
   * Everything under an archive folder (`/<folder>/…`): its pages list the zip's entries level by
   * level, its file links serve entries, and `?zip` (Download all) is the zip itself.
   */
  async #inArchive(
    exchange: Exchange,
    archive: StorageObjectRecord,
    file: string,
    parts: string[],
    isFolder: boolean,
    query: URLSearchParams,
  ): Promise<void> {
    const top = parts[0]!
    // Download all, at any level of the folder: the zip itself.
    if (isFolder && query.has('zip'))
      return this.#file(
        exchange,
        { ...archive, name: `${top}.zip` },
        file,
        { range: exchange.header('range'), ifNoneMatch: exchange.header('if-none-match'), ifRange: exchange.header('if-range') },
        true,
      )
    const entries = await this.#inspect(exchange, archive, file, `/${encodeURIComponent(top)}/?zip`)
    if (entries === null) return
    const inner = parts.slice(1).join('/')
    if (!isFolder) {
      if (inner === '') return exchange.send(301, { location: `/${encodePath(parts)}/`, 'cache-control': 'no-cache' })
      if (entries.some((e) => e.fileName === inner && !e.fileName.endsWith('/')))
        return this.#entry(exchange, archive, file, inner, query.has('download'), `/${encodeURIComponent(top)}/?zip`)
      if (entries.some((e) => e.fileName.startsWith(`${inner}/`)))
        return exchange.send(301, { location: `/${encodePath(parts)}/`, 'cache-control': 'no-cache' })
      return this.#notFound(exchange)
    }
    const prefix = inner === '' ? '' : `${inner}/`
    const folders = new Set<string>()
    const files: { name: string; size: number }[] = []
    for (const entry of entries) {
      if (!entry.fileName.startsWith(prefix)) continue
      const rest = entry.fileName.slice(prefix.length)
      const slash = rest.indexOf('/')
      if (slash === -1) {
        if (rest !== '') files.push({ name: rest, size: entry.uncompressedSize })
      } else if (slash > 0) folders.add(rest.slice(0, slash))
    }
    if (inner !== '' && files.length === 0 && folders.size === 0) return this.#notFound(exchange)
    const zipHref = `${'../'.repeat(parts.length - 1)}?zip`
    const title = inner === '' ? (this.registry.files.folderLabel(archive.websiteId, top) ?? top) : parts[parts.length - 1]!
    exchange.send(
      200,
      PAGE_HEADERS,
      listingPage(
        title,
        [...folders].sort().map((name) => ({ name })),
        files,
        zipHref,
      ),
    )
  }

  /** Public files may sit in a shared cache a minute; a protected one (its site's or its folder's password) never. */
  #cacheControl(websiteId: string, folder: string): string {
    const passwords = this.registry.sitePasswords
    return passwords.locked(websiteId) || passwords.lockedFolders(websiteId, folder.split('/')).length > 0
      ? 'private, no-store'
      : 'public, max-age=60, must-revalidate'
  }

  /**
   * An entry of a zip. Its bytes are checked against the zip's central directory before the first is
   * sent: an entry that inflates to more or fewer bytes than it declares (a damaged or hostile zip) is a
   * 422 naming it and saying where the whole zip is (`whole`), never a body cut off at the declared size
   * or a connection dropped halfway. Archive folders are checked whole at finalize; this covers every
   * other zip browsed as a folder, and those finalized before that check.
   */
  async #entry(
    exchange: Exchange,
    archive: StorageObjectRecord,
    file: string,
    path: string,
    download: boolean,
    whole: string,
  ): Promise<void> {
    let reader: ArchiveReader | null = null
    try {
      const opened = await openArchive(file).catch(() => null)
      if (opened === null) return this.#notFound(exchange)
      reader = opened.zip
      // Out of the bounds (a zip bomb, too many entries): never inflated.
      if (archiveProblem(opened.entries, reader.entryCount) !== null) return this.#notFound(exchange)
      const entry = opened.entries.find((e) => e.fileName === path)
      if (entry === undefined || entry.fileName.endsWith('/')) return this.#notFound(exchange)
      const name = path.split('/').pop()!
      const headers: Headers = {
        'content-type': withCharset(contentTypeFor(name)),
        'content-disposition': disposition(openedAs(download, contentTypeFor(name)), name),
        'cache-control': this.#cacheControl(archive.websiteId, archive.folder),
        'x-content-type-options': 'nosniff',
        'content-security-policy': 'sandbox',
      }
      if (entry.uncompressedSize <= ENTRY_WHOLE_MAX_BYTES) {
        const chunks: Buffer[] = []
        const why = await readEntry(reader, entry, chunks)
        if (why !== null) return this.#damaged(exchange, archive.name, path, why, whole)
        return exchange.send(200, headers, Buffer.concat(chunks))
      }
      let checked = this.#checked.get(archive.hash)
      if (checked === undefined) {
        if (this.#checked.size >= 32) this.#checked.delete(this.#checked.keys().next().value!)
        this.#checked.set(archive.hash, (checked = new Map()))
      }
      let why = checked.get(path)
      if (why === undefined) checked.set(path, (why = await readEntry(reader, entry)))
      if (why !== null) return this.#damaged(exchange, archive.name, path, why, whole)
      const stream = await reader.openReadStreamPromise(entry)
      await exchange.sendStream(200, headers, stream as unknown as AsyncIterable<Uint8Array> & { destroy(): void }, entry.uncompressedSize)
    } finally {
      reader?.close()
    }
  }

  /** The 422 of an entry whose bytes are not what its zip says, sent before any of them. */
  #damaged(exchange: Exchange, zipName: string, entry: string, why: string, whole: string): void {
    const error = new ApiError(
      'unprocessable',
      `${entry} in ${zipName} is damaged: it ${why}, so it is not served. Download the whole zip (${whole}) and open it with a tool that repairs zips, or ask the person who shared it to zip the folder again.`,
      { reason: 'archive_entry_invalid', entry, archive: zipName },
    )
    exchange.send(422, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }, JSON.stringify(errorBody(error)))
  }
}
