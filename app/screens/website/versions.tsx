import { api } from '../../api.js'
import { useSession } from '../../session.js'
import { useState } from 'react'
import { structuredPatch } from 'diff'
import { useResource } from '../../ui/data.js'
import { actorName, formatBytes, type Change, type RuleWarning, type Version } from '../../types.js'
import { RuleWarnings } from './deploy.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { Badge, Card, Loaded, Select, Time } from '../../ui/kit.js'
import { Pager, usePaged } from '../../ui/pager.js'
import { useWebsite } from './context.js'

const SOURCES: Record<string, string> = {
  deploy: 'a deploy',
  json: 'a deploy',
  multipart: 'a deploy',
  write: 'a source edit',
  delete: 'deleted files',
  restore: 'a restore',
  rollback: 'a rollback',
  create: 'creation',
  anonymous: 'an anonymous publish',
  scaffold: 'the blog scaffold',
}

/**
 * The version history, newest first: each version with how it was made, when and by whom, its files;
 * the published and head versions marked. Publishing a chosen version, rolling back, restoring one to
 * the head and unpublishing each wait for a confirmation that names the version.
 */
export function Versions() {
  const { website: w, reload } = useWebsite()
  const { can } = useSession()
  const versions = usePaged<Version>(`/v1/websites/${w.id}/source/versions`, {}, 20)
  const manage = can('publishing.manage') && w.deletedAt === null
  const write = can('source.write') && w.deletedAt === null
  /** Publishing a version older than the live one: a rollback, named as one. */
  const rollback = (version: number) => w.publishedVersion !== null && version < w.publishedVersion
  const after = async (action: Promise<unknown>) => {
    await action
    await Promise.all([reload(), versions.reload()])
  }
  return (
    <>
      <Card
        title="Versions"
        actions={
          manage &&
          w.publishedVersion !== null && (
            <ConfirmButton
              label="Unpublish"
              title="Unpublish the site?"
              confirmLabel="Unpublish"
              tone="danger"
              onConfirm={() => after(api('POST', `/v1/websites/${w.id}/unpublish`))}
            >
              The live site (version {w.publishedVersion}) goes offline on every address. Its versions stay, and you can publish again at
              any time.
            </ConfirmButton>
          )
        }
      >
        {(manage || write) && (
          <p className="mb-2 text-sm text-zinc-700">
            <strong>Roll back to this</strong> publishes an earlier version at once (copied as a new version; history is kept).{' '}
            <strong>Restore to head</strong> copies it as the new draft only, to look at or edit before you publish.
          </p>
        )}
        <Loaded resource={versions}>
          {(page) => (
            <ol aria-label="Versions" className="flex flex-col divide-y divide-zinc-100">
              {page.items.map((v) => (
                <li key={v.version} className="flex flex-col gap-2 py-3 sm:flex-row sm:items-start sm:justify-between">
                  <div className="min-w-0 text-sm">
                    <div className="flex flex-wrap items-center gap-2">
                      <span className="font-semibold">Version {v.version}</span>
                      {v.isPublished && <Badge>live</Badge>}
                      {v.isHead && <Badge>head</Badge>}
                    </div>
                    <p className="text-zinc-700">
                      {SOURCES[v.source] ?? v.source} by {actorName(v.createdBy)}, <Time at={v.createdAt} /> · {v.fileCount}{' '}
                      {v.fileCount === 1 ? 'file' : 'files'}, {formatBytes(v.totalBytes)}
                    </p>
                    {v.message !== null && v.message !== '' && <p className="text-zinc-600 break-words">“{v.message}”</p>}
                    {v.urls.preview !== null && (
                      <p>
                        <a className="text-sky-800 underline" href={v.urls.preview} target="_blank" rel="noreferrer">
                          View version {v.version}
                        </a>{' '}
                        <span className="text-zinc-600">(its own address, kept as long as the version)</span>
                      </p>
                    )}
                    {v.version > 1 && <VersionChanges websiteId={w.id} version={v.version} />}
                  </div>
                  <div className="flex shrink-0 flex-wrap gap-2">
                    {manage && v.isHead && !v.isPublished && (
                      <ConfirmButton
                        label="Publish"
                        title={`Publish version ${v.version}?`}
                        confirmLabel={`Publish version ${v.version}`}
                        tone="primary"
                        onConfirm={() => after(api('POST', `/v1/websites/${w.id}/publish`))}
                      >
                        Version {v.version} goes live{w.publishedVersion !== null ? `, replacing version ${w.publishedVersion}` : ''}.
                      </ConfirmButton>
                    )}
                    {manage && !v.isHead && !v.isPublished && v.fileCount > 0 && (
                      <ConfirmButton
                        label={rollback(v.version) ? 'Roll back to this' : 'Publish this version'}
                        title={rollback(v.version) ? `Roll back to version ${v.version}?` : `Publish version ${v.version}?`}
                        confirmLabel={rollback(v.version) ? `Roll back to version ${v.version}` : `Publish version ${v.version}`}
                        tone="primary"
                        onConfirm={() => after(api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: v.version } }))}
                      >
                        Version {v.version} is copied as a new head version and published
                        {w.publishedVersion !== null ? `, replacing version ${w.publishedVersion}` : ''}. History is kept.
                      </ConfirmButton>
                    )}
                    {write && !v.isHead && v.fileCount > 0 && (
                      <ConfirmButton
                        label="Restore to head"
                        title={`Restore version ${v.version} to the head?`}
                        confirmLabel={`Restore version ${v.version}`}
                        onConfirm={() => after(api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to: v.version } }))}
                      >
                        A new head version copies version {v.version}, to preview on the draft address. Nothing is published.
                      </ConfirmButton>
                    )}
                  </div>
                </li>
              ))}
            </ol>
          )}
        </Loaded>
        <Pager pager={versions.pager} label="Versions" />
      </Card>
      {w.headVersion > 1 && <CompareVersions websiteId={w.id} head={w.headVersion} />}
    </>
  )
}

const CHANGE_WORDS: Record<Change['change'], string> = { added: 'added', removed: 'removed', modified: 'changed' }

/** What a version changed against the one before it: the files added, removed and changed, with their sizes (opened on demand). */
function VersionChanges({ websiteId, version }: { websiteId: string; version: number }) {
  const [open, setOpen] = useState(false)
  return (
    <details className="mt-1" onToggle={(event) => setOpen((event.target as HTMLDetailsElement).open)}>
      <summary className="cursor-pointer text-zinc-700">Files changed since version {version - 1}</summary>
      {open && (
        <>
          <VersionRuleWarnings websiteId={websiteId} version={version} />
          <ChangeList websiteId={websiteId} from={version - 1} to={version} label={`Files changed in version ${version}`} />
        </>
      )}
    </details>
  )
}

/** The lines of the version's `_redirects` and `_headers` that do not apply (its deployment status names them); nothing when all do. */
function VersionRuleWarnings({ websiteId, version }: { websiteId: string; version: number }) {
  const status = useResource(`${websiteId}:status:${version}`, (signal) =>
    api<{ diagnostics?: (RuleWarning & { step: string })[] }>('GET', `/v1/websites/${websiteId}/deployments/status`, {
      query: { version },
      signal,
    }),
  )
  const warnings = (status.data?.diagnostics ?? []).filter((d) => d.step === 'rules')
  return warnings.length === 0 ? null : (
    <RuleWarnings warnings={warnings} lead={`These lines of version ${version}’s rules do not apply (the others do):`} />
  )
}

function ChangeList({ websiteId, from, to, label }: { websiteId: string; from: number; to: number; label: string }) {
  const changes = usePaged<Change>(`/v1/websites/${websiteId}/source/changes`, { from, to }, 50)
  return (
    <>
      <Loaded resource={changes}>
        {(page) =>
          page.items.length === 0 ? (
            <p className="text-zinc-600">No file changed.</p>
          ) : (
            <ul aria-label={label} className="mt-1 flex flex-col gap-0.5">
              {page.items.map((c) => (
                <li key={c.path} className="break-all">
                  <span className="font-mono">{c.path}</span> {CHANGE_WORDS[c.change]}
                  <span className="text-zinc-600">
                    {' '}
                    (
                    {c.change === 'added'
                      ? formatBytes(c.toSize ?? 0)
                      : c.change === 'removed'
                        ? formatBytes(c.fromSize ?? 0)
                        : `${formatBytes(c.fromSize ?? 0)} → ${formatBytes(c.toSize ?? 0)}`}
                    )
                  </span>
                  {c.change === 'modified' && (c.fromSize ?? 0) <= TEXT_DIFF_MAX && (c.toSize ?? 0) <= TEXT_DIFF_MAX && (
                    <TextChanges websiteId={websiteId} path={c.path} from={from} to={to} />
                  )}
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <Pager pager={changes.pager} label={label} />
    </>
  )
}

/** Files up to this size offer their changed lines (both sides are read through the API when opened). */
const TEXT_DIFF_MAX = 64 * 1024

/** The lines of a file that changed between two versions, read when opened: three lines of context around each change. */
function TextChanges({ websiteId, path, from, to }: { websiteId: string; path: string; from: number; to: number }) {
  const [open, setOpen] = useState(false)
  return (
    <details onToggle={(event) => setOpen((event.target as HTMLDetailsElement).open)}>
      <summary className="cursor-pointer text-sky-800 underline">Show the changed lines</summary>
      {open && <LineDiff websiteId={websiteId} path={path} from={from} to={to} />}
    </details>
  )
}

interface ReadFiles {
  files: { content: string; encoding: 'utf8' | 'base64' }[]
}

function LineDiff({ websiteId, path, from, to }: { websiteId: string; path: string; from: number; to: number }) {
  const sides = useResource(`${websiteId}:${path}:${from}:${to}`, (signal) =>
    Promise.all(
      [from, to].map((version) =>
        api<ReadFiles>('POST', `/v1/websites/${websiteId}/source/files/read`, { body: { paths: [path], version }, signal }),
      ),
    ),
  )
  return (
    <Loaded resource={sides}>
      {([before, after]) => {
        const [a, b] = [before.files[0], after.files[0]]
        if (a === undefined || b === undefined || a.encoding !== 'utf8' || b.encoding !== 'utf8')
          return <p className="text-zinc-600">Not a text file: its lines cannot be shown.</p>
        const { hunks } = structuredPatch(path, path, a.content, b.content, '', '', { context: 3 })
        if (hunks.length === 0) return <p className="text-zinc-600">Only the bytes changed (line endings or encoding), not the text.</p>
        return (
          <div aria-label={`Changed lines of ${path}`} className="mt-1 flex flex-col gap-2 overflow-x-auto text-xs">
            {hunks.map((hunk) => (
              <div key={`${hunk.oldStart}-${hunk.newStart}`}>
                <p className="text-zinc-600">
                  Lines {hunk.newStart}–{hunk.newStart + Math.max(hunk.newLines - 1, 0)} of version {to}
                </p>
                <pre className="rounded border border-zinc-200 font-mono">
                  {hunk.lines
                    .filter((line) => !line.startsWith('\\'))
                    .map((line, i) => (
                      <span
                        key={i}
                        className={`block px-2 ${line[0] === '+' ? 'bg-emerald-50 text-emerald-900' : line[0] === '-' ? 'bg-red-50 text-red-900' : 'text-zinc-700'}`}
                      >
                        {line[0] === '+' ? '+ ' : line[0] === '-' ? '− ' : '  '}
                        {line.slice(1)}
                      </span>
                    ))}
                </pre>
              </div>
            ))}
          </div>
        )
      }}
    </Loaded>
  )
}

/** Any two versions side by side: the files that differ between them, with their sizes. */
function CompareVersions({ websiteId, head }: { websiteId: string; head: number }) {
  const [from, setFrom] = useState(Math.max(1, head - 1))
  const [to, setTo] = useState(head)
  return (
    <Card title="Compare two versions">
      <div className="flex flex-wrap items-end gap-3">
        <VersionSelect label="From version" name="from" head={head} value={from} onChange={setFrom} />
        <VersionSelect label="To version" name="to" head={head} value={to} onChange={setTo} />
      </div>
      <div className="mt-2 text-sm">
        {from === to ? (
          <p className="text-zinc-600">Choose two different versions.</p>
        ) : (
          <ChangeList websiteId={websiteId} from={from} to={to} label={`Files changed from version ${from} to ${to}`} />
        )}
      </div>
    </Card>
  )
}

/** A choice of version, newest first. */
function VersionSelect(props: { label: string; name: string; head: number; value: number; onChange: (version: number) => void }) {
  const { head, onChange, ...field } = props
  return (
    <Select {...field} onChange={(e) => onChange(Number(e.target.value))}>
      {Array.from({ length: head }, (_, i) => head - i).map((n) => (
        <option key={n} value={n}>
          {n}
        </option>
      ))}
    </Select>
  )
}
