import { useState, type DragEvent, type FormEvent } from 'react'
import {
  STORAGE_FOLDER_MAX_CHARS,
  STORAGE_NAME_MAX_CHARS,
  STORAGE_NEW_FOLDER_MAX_CHARS,
  STORAGE_UPLOADS_PER_BEGIN,
} from '../../../core/limits.js'
import { api, ApiError, upload } from '../../api.js'
import { Link } from '../../router.js'
import { useSession } from '../../session.js'
import { formatBytes, type BegunFile, type StorageObject } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction } from '../../ui/data.js'
import { droppedFiles, type Picked } from '../../ui/dropped.js'
import { FilePicker } from '../../ui/file-picker.js'
import { Button, Card, Empty, ErrorNote, Field, Loaded, Locked, Notice, Time } from '../../ui/kit.js'
import { Pager, usePaged } from '../../ui/pager.js'
import { PasswordCard } from '../../ui/password.js'
import { Progress } from '../../ui/progress.js'
import { useWebsite } from './context.js'

interface Listing {
  items: StorageObject[]
  nextCursor: string | null
  /** null: every file, across folders (the top of the screen). */
  folder: string | null
  folders: string[]
  folderLabels: Record<string, string>
  protectedFolders: string[]
  folderProtected: boolean
  usedBytes: number
}

/** Bytes a PUT sends at most: an interrupted upload resumes from what the server stored. */
const CHUNK_BYTES = 8 << 20

/** What a begin answers: the folder the files go to (made now, or joined) and its link. */
interface Begun {
  folder: string
  folderUrl: string
  files: BegunFile[]
}

interface Finalized {
  files: { name: string; ok: boolean; error?: string }[]
}

/** The URL path of an API URL the server answered (uploadUrl), for a same-origin request. */
const pathOf = (url: string) => new URL(url, location.origin).pathname

/**
 * Sends files through the same endpoints an agent uses: a begin (POST …/objects/uploads: in the folder
 * shown, or a new folder from the top; each file by its path in it, so a folder's subfolders are kept),
 * each file's bytes in chunks with Content-Range (PUT upload.url), after a failed chunk the offset the
 * server stored (POST resumeUrl) before trying again; then a finalize. A begin takes at most 1,000
 * files: a larger folder goes in turns, each after the first joining the folder it made.
 */
async function sendFiles(
  websiteId: string,
  files: Picked[],
  folder: string,
  onProgress: (index: number, fraction: number) => void,
): Promise<{ folder: string; folderUrl: string; failed: string[] }> {
  let made: { folder: string; folderUrl: string } | null = null
  const failed: string[] = []
  for (let from = 0; from < files.length; from += STORAGE_UPLOADS_PER_BEGIN) {
    const turn = files.slice(from, from + STORAGE_UPLOADS_PER_BEGIN)
    const into = made?.folder ?? folder
    const begun: Begun = await api('POST', `/v1/websites/${websiteId}/objects/uploads`, {
      body: {
        files: turn.map(({ path, file }) => ({ name: path, byteSize: file.size, ...(file.type === '' ? {} : { mimeType: file.type }) })),
        ...(into === '' ? {} : { folder: into }),
      },
    })
    made = { folder: begun.folder, folderUrl: begun.folderUrl }
    for (const [i, job] of begun.files.entries()) await sendBytes(job, turn[i].file, (fraction) => onProgress(from + i, fraction))
    const done = await api<Finalized>('POST', `/v1/websites/${websiteId}/objects/finalize`, { body: { ids: begun.files.map((f) => f.id) } })
    failed.push(...done.files.filter((f) => !f.ok).map((f) => `${f.name}: ${f.error ?? 'not finished'}`))
  }
  return { ...made!, failed }
}

/** One file's bytes, in chunks, resumed from what the server stored after a failed one. */
async function sendBytes(job: BegunFile, file: File, onProgress: (fraction: number) => void): Promise<void> {
  let offset = 0
  let failures = 0
  // An empty file has no bytes to send: it is complete as announced.
  while (offset < file.size) {
    const end = Math.min(file.size, offset + CHUNK_BYTES)
    try {
      await upload('PUT', pathOf(job.upload.url), file.slice(offset, end), {
        headers: { 'content-type': 'application/octet-stream', 'content-range': `bytes ${offset}-${end - 1}/${file.size}` },
        onProgress: (f) => onProgress((offset + f * (end - offset)) / file.size),
      })
      offset = end
      failures = 0
    } catch (error) {
      if (
        ++failures > 3 ||
        (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.details?.reason !== 'offset_mismatch')
      )
        throw error
      // Where to go on from: what the server stored of this upload.
      offset = (await api<{ offset: number }>('POST', pathOf(job.resumeUrl))).offset
    }
  }
}

/** A storage website's shared files: folders, links and expiry; upload, rename, move, delete; a folder as zip. */
export function Files({ folder }: { folder: string }) {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const listing = usePaged<StorageObject, Listing>(`/v1/websites/${w.id}/objects`, { folder: folder === '' ? undefined : folder }, 50)
  const write = can('storage.write') && w.deletedAt === null
  const crumbs = folder === '' ? [] : folder.split('/')
  const folderLink = (path: string) => `/websites/${w.id}/files${path === '' ? '' : `/${encodeURIComponent(path)}`}`
  // The folder's page on the site, as the API names it (folderUrl): the link a person shares.
  const folderUrl = w.urls.published === null ? null : `${w.urls.published}/${crumbs.map((c) => `${encodeURIComponent(c)}/`).join('')}`
  const zipUrl = `${folderUrl}?zip`
  return (
    <div className="flex flex-col gap-4">
      <nav aria-label="Folder" className="text-sm">
        <ol className="flex flex-wrap items-center gap-1">
          <li>
            <Link to={folderLink('')}>All files</Link>
          </li>
          {crumbs.map((name, i) => (
            <li key={i}>
              / <Link to={folderLink(crumbs.slice(0, i + 1).join('/'))}>{name}</Link>
            </li>
          ))}
        </ol>
      </nav>
      {folder !== '' && folderUrl !== null && (
        <Card title="Share this folder">
          <div className="flex flex-col gap-2 text-sm">
            <FolderLink url={folderUrl} />
            <p className="text-zinc-700">
              Anyone with this link sees the folder’s files and can download them all as one zip
              {listing.data?.folderProtected === true ? ', once they give its password' : ''}.
            </p>
          </div>
        </Card>
      )}
      {/* Keyed by the folder: what an upload said elsewhere is not said here. */}
      {write && <UploadFiles key={folder} folder={folder} onUploaded={() => void listing.reload()} />}
      {write && folder !== '' && listing.data !== undefined && (
        <FolderPassword folder={folder} locked={listing.data.folderProtected} onChange={() => void listing.reload()} />
      )}
      <Card
        title={folder === '' ? 'All files' : folder}
        actions={folder === '' || folderUrl === null ? undefined : <a href={zipUrl}>Download this folder as zip</a>}
      >
        <Loaded resource={listing}>
          {(page) => (
            <div className="flex flex-col gap-2">
              {page.folderProtected && (
                <p className="text-sm">
                  <Locked what="folder" /> This folder asks for a password.
                </p>
              )}
              {page.folders.length > 0 && (
                <ul aria-label="Folders" className="flex flex-wrap gap-2">
                  {page.folders.map((name) => (
                    <li key={name}>
                      <Link
                        to={folderLink(folder === '' ? name : `${folder}/${name}`)}
                        className="inline-block rounded-md border border-zinc-300 px-2 py-1 text-sm"
                      >
                        📁 {page.folderLabels[name] ?? name}
                      </Link>{' '}
                      {page.protectedFolders.includes(name) && <Locked what="folder" />}
                    </li>
                  ))}
                </ul>
              )}
              {page.items.length === 0 && page.folders.length === 0 ? (
                <Empty>No files here yet.</Empty>
              ) : (
                <ul aria-label="Files" className="flex flex-col divide-y divide-zinc-100">
                  {page.items.map((o) => (
                    <FileRow key={o.id} object={o} write={write} onChange={() => void listing.reload()} />
                  ))}
                </ul>
              )}
              <p className="text-xs text-zinc-600">{formatBytes(page.usedBytes)} shared on this site in all.</p>
            </div>
          )}
        </Loaded>
        <Pager pager={listing.pager} label="Files" />
      </Card>
    </div>
  )
}

/** A folder's link to share, with a button that copies it. */
function FolderLink({ url, name = 'this folder' }: { url: string; name?: string }) {
  return (
    <p className="flex flex-wrap items-center gap-2">
      <a href={url} target="_blank" rel="noreferrer" className="font-mono text-sm break-all">
        {url}
      </a>
      <CopyButton text={url} label={`the link to ${name}`} />
    </p>
  )
}

/** The folder a pick or a drop was, when it was one folder and nothing else (its files' paths all start with its name). */
function oneFolder(picked: Picked[]): string | null {
  const top = picked[0]?.path.split('/')[0]
  return top !== undefined && picked.every((p) => p.path.startsWith(`${top}/`)) ? top : null
}

function UploadFiles({ folder, onUploaded }: { folder: string; onUploaded: () => void }) {
  const { website: w } = useWebsite()
  const [named, setNamed] = useState('')
  const [over, setOver] = useState(false)
  const [progress, setProgress] = useState<{ name: string; fraction: number; index: number; count: number } | null>(null)
  const [error, setError] = useState<ApiError | null>(null)
  const [done, setDone] = useState<{ said: string; made: { folder: string; url: string } | null } | null>(null)
  const send = async (picked: Picked[]) => {
    setError(null)
    setDone(null)
    // Finder's own file, never meant to be shared.
    let files = picked.filter((p) => !/(^|\/)\.DS_Store$/.test(p.path))
    try {
      if (files.length === 0) return
      // From the top, into a new folder under the name chosen (the server adds a suffix nobody can guess).
      let into = folder === '' ? named.trim() : folder
      // One folder picked or dropped from the top is the new folder: named after it unless a name was
      // given, its files at its top. Into a folder shown, it goes in whole, as a subfolder.
      const top = folder === '' ? oneFolder(files) : null
      if (top !== null) {
        into ||= top.slice(0, STORAGE_NEW_FOLDER_MAX_CHARS)
        files = files.map((p) => ({ ...p, path: p.path.slice(top.length + 1) }))
      }
      setProgress({ name: files[0].path, fraction: 0, index: 1, count: files.length })
      const sent = await sendFiles(w.id, files, into, (index, fraction) =>
        setProgress({ name: files[index].path, fraction, index: index + 1, count: files.length }),
      )
      const shared = files.length - sent.failed.length
      setDone({
        said:
          `${shared} file${shared === 1 ? '' : 's'} shared${folder === '' ? ` in the new folder ${sent.folder}` : ''}.` +
          (sent.failed.length === 0 ? '' : ` Not shared: ${sent.failed.join('; ')}`),
        made: folder === '' ? { folder: sent.folder, url: sent.folderUrl } : null,
      })
      setNamed('')
      onUploaded()
    } catch (caught) {
      setError(caught as ApiError)
    } finally {
      setProgress(null)
    }
  }
  const onDrop = async (event: DragEvent) => {
    event.preventDefault()
    setOver(false)
    void send(await droppedFiles(event.dataTransfer))
  }
  return (
    <Card title="Upload files">
      <div className="flex flex-col gap-3">
        {folder === '' && (
          <Field
            label="Name of the new folder (optional)"
            name="folderName"
            value={named}
            onChange={(e) => setNamed(e.target.value)}
            maxLength={STORAGE_NEW_FOLDER_MAX_CHARS}
            hint="The files go into a new folder with this name and a suffix nobody can guess: its link is what you share."
          />
        )}
        <div
          onDragOver={(e) => (e.preventDefault(), setOver(true))}
          onDragLeave={() => setOver(false)}
          onDrop={onDrop}
          data-testid="file-drop-zone"
          className={`flex flex-col items-center gap-2 rounded-md border-2 border-dashed p-4 text-center text-sm ${over ? 'border-blue-500 bg-blue-50' : 'border-zinc-300'}`}
        >
          <p>Drop files or a folder here, or choose them.</p>
          <div className="flex flex-wrap justify-center gap-2">
            <FilePicker label="Choose files" onPick={(picked) => void send(picked)} />
            <FilePicker label="Choose a folder" folder onPick={(picked) => void send(picked)} />
          </div>
        </div>
        {progress !== null && (
          <div role="status" aria-label="Upload progress" className="flex flex-col gap-1 text-sm">
            <p>
              Uploading {progress.name} (file {progress.index} of {progress.count})
            </p>
            <Progress label={`Uploading ${progress.name}`} value={progress.fraction} />
          </div>
        )}
        <ErrorNote error={error} />
        {done !== null && <Notice>{done.said}</Notice>}
        {done !== null && done.made !== null && (
          <div className="flex flex-col gap-1 text-sm">
            <p>
              Share the new folder with its link (or{' '}
              <Link to={`/websites/${w.id}/files/${encodeURIComponent(done.made.folder)}`}>open it here</Link>):
            </p>
            <FolderLink url={done.made.url} name="the new folder" />
          </div>
        )}
      </div>
    </Card>
  )
}

/** A folder's password (its page, files, subfolders and zip ask for it). */
function FolderPassword({ folder, locked, onChange }: { folder: string; locked: boolean; onChange: () => void }) {
  const { website: w } = useWebsite()
  return (
    <PasswordCard
      title="Folder password"
      labels={['Password for this folder', 'New password for this folder']}
      hint="Its page, files, subfolders and zip ask for it. Tell people the password with the link."
      locked={locked}
      save={async (password) => {
        await api('PUT', `/v1/websites/${w.id}/objects/folders/${encodeURIComponent(folder)}/password`, { body: { password } })
        onChange()
      }}
      said={{
        saved: 'Saved: the folder’s link now asks for this password.',
        removed: 'Removed: anyone with the link can open the folder.',
        removal: 'Remove the folder’s password',
        ask: 'Once it is removed, anyone with the link can open the folder.',
      }}
    />
  )
}

function FileRow({ object: o, write, onChange }: { object: StorageObject; write: boolean; onChange: () => void }) {
  const { website: w } = useWebsite()
  const [editing, setEditing] = useState<'rename' | 'move' | null>(null)
  const base = `/v1/websites/${w.id}/objects/${o.id}`
  const change = useAction(async (what: 'rename' | 'move', value: string) => {
    if (what === 'rename') await api('PATCH', base, { body: { name: value } })
    else await api('POST', `${base}/move`, { body: { folder: value } })
    setEditing(null)
    onChange()
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    void change.run(editing!, String(new FormData(event.currentTarget).get('value')).trim())
  }
  return (
    <li className="flex flex-col gap-2 py-2 text-sm">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <div className="min-w-0">
          <a href={o.url} target="_blank" rel="noreferrer" className="font-medium break-all">
            {o.label ?? o.name}
          </a>
          <p className="text-xs text-zinc-600">
            {o.folder === '' ? '' : `in ${o.folderLabel ?? o.folder} · `}
            {formatBytes(o.size)} ·{' '}
            {o.expiresAt === null ? (
              'the link does not expire'
            ) : (
              <>
                the link expires <Time at={o.expiresAt} />
              </>
            )}
          </p>
        </div>
        <div className="flex flex-wrap gap-1">
          <CopyButton text={o.url} label={`the link to ${o.name}`} />
          {write && (
            <>
              <Button
                className="px-2 py-1 text-xs"
                onClick={() => setEditing(editing === 'rename' ? null : 'rename')}
                aria-expanded={editing === 'rename'}
              >
                Rename
              </Button>
              <Button
                className="px-2 py-1 text-xs"
                onClick={() => setEditing(editing === 'move' ? null : 'move')}
                aria-expanded={editing === 'move'}
              >
                Move
              </Button>
              <ConfirmButton
                label="Delete"
                title={`Delete ${o.name}?`}
                confirmLabel="Delete file"
                tone="danger"
                onConfirm={async () => {
                  await api('DELETE', base)
                  onChange()
                }}
              >
                Its link stops working at once.
              </ConfirmButton>
            </>
          )}
        </div>
      </div>
      {editing !== null && (
        <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
          <Field
            label={editing === 'rename' ? `New name for ${o.name}` : `Folder to move ${o.name} to ('' for the top)`}
            name="value"
            defaultValue={editing === 'rename' ? (o.label ?? o.name) : o.folder}
            maxLength={editing === 'rename' ? STORAGE_NAME_MAX_CHARS : STORAGE_FOLDER_MAX_CHARS}
            error={change.error}
            className="min-w-0 flex-1"
          />
          <Button type="submit" tone="primary" busy={change.busy}>
            {editing === 'rename' ? 'Rename' : 'Move'}
          </Button>
        </form>
      )}
      <ErrorNote error={change.error} fields={['name', 'folder']} />
    </li>
  )
}
