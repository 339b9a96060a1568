import { useRef, useState, type DragEvent, type FormEvent } from 'react'
import { STORAGE_FOLDER_MAX_CHARS, STORAGE_NAME_MAX_CHARS, STORAGE_NEW_FOLDER_MAX_CHARS } from '../../../core/limits.js'
import { api, ApiError, upload } from '../../api.js'
import { Link } from '../../router.js'
import { useSession } from '../../session.js'
import { formatBytes, type BegunFile, type StorageObject } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction } from '../../ui/data.js'
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

/** The URL path of an API URL the server answered (uploadUrl), for a same-origin request. */
const pathOf = (url: string) => new URL(url, location.origin).pathname

/**
 * Sends files through the same endpoints an agent uses: one begin for all of them (POST
 * …/objects/uploads: in the folder shown, or a new folder from the top), each file's bytes in chunks
 * with Content-Range (PUT upload.url), after a failed chunk the offset the server stored (POST
 * resumeUrl) before trying again; then one finalize.
 */
async function sendFiles(
  websiteId: string,
  files: File[],
  folder: string,
  onProgress: (name: string, fraction: number) => void,
): Promise<{ folder: string; failed: string[] }> {
  const begun = await api<{ folder: string; files: BegunFile[] }>('POST', `/v1/websites/${websiteId}/objects/uploads`, {
    body: {
      files: files.map((file) => ({ name: file.name, byteSize: file.size, ...(file.type === '' ? {} : { mimeType: file.type }) })),
      ...(folder === '' ? {} : { folder }),
    },
  })
  for (const [i, job] of begun.files.entries()) {
    const file = files[i]
    let offset = 0
    let failures = 0
    // An empty file has no bytes to send: it is complete as announced.
    while (offset < file.size) {
      const end = Math.min(file.size, offset + CHUNK_BYTES)
      try {
        await upload('PUT', pathOf(job.upload.url), file.slice(offset, end), {
          headers: { 'content-type': 'application/octet-stream', 'content-range': `bytes ${offset}-${end - 1}/${file.size}` },
          onProgress: (f) => onProgress(file.name, (offset + f * (end - offset)) / file.size),
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
  const done = await api<{ files: { name: string; ok: boolean; error?: string }[] }>('POST', `/v1/websites/${websiteId}/objects/finalize`, {
    body: { ids: begun.files.map((f) => f.id) },
  })
  return { folder: begun.folder, failed: done.files.filter((f) => !f.ok).map((f) => `${f.name}: ${f.error ?? 'not finished'}`) }
}

/** A storage website's shared files: folders, links and expiry; upload, rename, move, delete; a folder as zip. */
export function Files({ folder }: { folder: string }) {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const listing = usePaged<StorageObject, Listing>(`/v1/websites/${w.id}/objects`, { folder: folder === '' ? undefined : folder }, 50)
  const write = can('storage.write') && w.deletedAt === null
  const crumbs = folder === '' ? [] : folder.split('/')
  const folderLink = (path: string) => `/websites/${w.id}/files${path === '' ? '' : `/${encodeURIComponent(path)}`}`
  const zipUrl = `${w.urls.published}/${crumbs.map(encodeURIComponent).join('/')}${crumbs.length === 0 ? '' : '/'}?zip`
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
      {write && <UploadFiles folder={folder} onUploaded={() => void listing.reload()} />}
      {write && folder !== '' && listing.data !== undefined && (
        <FolderPassword folder={folder} locked={listing.data.folderProtected} onChange={() => void listing.reload()} />
      )}
      <Card
        title={folder === '' ? 'All files' : folder}
        actions={folder === '' ? undefined : <a href={zipUrl}>Download this folder as zip</a>}
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

function UploadFiles({ folder, onUploaded }: { folder: string; onUploaded: () => void }) {
  const { website: w } = useWebsite()
  const input = useRef<HTMLInputElement>(null)
  const [named, setNamed] = useState('')
  const [over, setOver] = useState(false)
  const [progress, setProgress] = useState<{ name: string; fraction: number; index: number; count: number } | null>(null)
  const [error, setError] = useState<ApiError | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const send = async (files: File[]) => {
    setError(null)
    setDone(null)
    try {
      if (files.length === 0) return
      // From the top, into a new folder under the name chosen (the server adds a suffix nobody can guess).
      const into = folder === '' ? named.trim() : folder
      setProgress({ name: files[0].name, fraction: 0, index: 1, count: files.length })
      const sent = await sendFiles(w.id, files, into, (name, fraction) =>
        setProgress({ name, fraction, index: files.findIndex((f) => f.name === name) + 1, count: files.length }),
      )
      const shared = files.length - sent.failed.length
      setDone(
        `${shared} file${shared === 1 ? '' : 's'} shared${folder === '' ? ` in the new folder ${sent.folder}` : ''}.` +
          (sent.failed.length === 0 ? '' : ` Not shared: ${sent.failed.join('; ')}`),
      )
      setNamed('')
      onUploaded()
    } catch (caught) {
      setError(caught as ApiError)
    } finally {
      setProgress(null)
      if (input.current !== null) input.current.value = ''
    }
  }
  const onDrop = (event: DragEvent) => {
    event.preventDefault()
    setOver(false)
    void send([...event.dataTransfer.files])
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
          <p>Drop files here, or choose them.</p>
          <input
            ref={input}
            type="file"
            multiple
            aria-label="Files to upload"
            onChange={(e) => void send([...(e.target.files ?? [])])}
            className="text-sm"
          />
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
        {done !== null && <Notice>{done}</Notice>}
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
