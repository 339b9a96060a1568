import { useRef, useState, type DragEvent } from 'react'
import { ApiError, upload } from '../../api.js'
import { formatBytes, type RuleWarning } from '../../types.js'
import { droppedFiles, type Picked } from '../../ui/dropped.js'
import { Button, Card, ErrorNote, Notice } from '../../ui/kit.js'
import { Progress } from '../../ui/progress.js'
import { LARGE_FILE_BYTES, ticketDeploy, type DeployProgress } from './ticket-deploy.js'

/** A folder's path inside the site: the folder's own name left off (`site/css/a.css` → `css/a.css`). */
function inSite(path: string): string {
  const parts = path.replace(/^\/+/, '').split('/')
  return parts.length > 1 ? parts.slice(1).join('/') : parts[0]
}

/**
 * A static site deployed from the browser: a folder dropped on the page (or picked) becomes a new
 * draft version. Sent as one multipart deploy (POST /v1/websites/{id}/deploy, the operation an API
 * client uses) when every file is up to 1 MiB; with a larger file, as a ticket deploy (ticket-deploy.ts:
 * large files by SHA-256, only what the server lacks, resumed after a dropped connection), up to the
 * plan's largest file. Progress in files and bytes, and per large file.
 */
export function DeployFolder({ websiteId, onDeployed }: { websiteId: string; onDeployed: () => void }) {
  const input = useRef<HTMLInputElement>(null)
  const [over, setOver] = useState(false)
  const [progress, setProgress] = useState<number | null>(null)
  /** A ticket deploy's progress (files with one over 1 MiB). */
  const [large, setLarge] = useState<DeployProgress | null>(null)
  const [error, setError] = useState<ApiError | null>(null)
  const [done, setDone] = useState<string | null>(null)
  /** The bad lines of the folder's _redirects and _headers (the deploy went through; those lines do not apply). */
  const [warnings, setWarnings] = useState<RuleWarning[]>([])
  /** The folder had no index.html at its top: the site's address has no page. */
  const [homeless, setHomeless] = useState(false)

  /** What a deploy answered, said on the panel. */
  const finished = (result: { version: number; changed: boolean; warnings: RuleWarning[] }, files: Picked[], noIndex: boolean) => {
    setWarnings(result.warnings)
    setHomeless(noIndex && result.changed)
    setDone(
      result.changed
        ? `Version ${result.version} is the new draft: ${files.length} ${files.length === 1 ? 'file' : 'files'}, ${formatBytes(files.reduce((n, f) => n + f.file.size, 0))}.`
        : `Nothing changed: the files equal version ${result.version}.`,
    )
    onDeployed()
  }

  const send = async (picked: Picked[]) => {
    setError(null)
    setDone(null)
    setWarnings([])
    setHomeless(false)
    const files = picked.filter((p) => !/(^|\/)\.(DS_Store|git)(\/|$)/.test(p.path))
    if (files.length === 0) return setError(new ApiError(0, 'validation', 'The folder holds no files to deploy', undefined))
    const form = new FormData()
    // The site's root is the folder's inside, whether it was dropped as one folder or as its files.
    const nested = files.every((f) => f.path.replace(/^\/+/, '').includes('/'))
    const paths = files.map(({ path }) => (nested ? inSite(path) : path.replace(/^\/+/, '')))
    files.forEach(({ file }, i) => form.append('files', file, paths[i]))
    const noIndex = !paths.includes('index.html')
    const message = `Deployed from the dashboard (${files.length} files)`
    if (files.some((f) => f.file.size > LARGE_FILE_BYTES)) {
      try {
        const result = await ticketDeploy(
          websiteId,
          files.map(({ file }, i) => ({ path: paths[i], file })),
          message,
          setLarge,
        )
        finished(result, files, noIndex)
      } catch (caught) {
        setError(caught as ApiError)
      } finally {
        setLarge(null)
      }
      return
    }
    form.append('message', message)
    setProgress(0)
    try {
      const result = await upload<{ version: number; changed: boolean; warnings: RuleWarning[] }>(
        'POST',
        `/v1/websites/${websiteId}/deploy`,
        form,
        { onProgress: setProgress },
      )
      finished(result, files, noIndex)
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
    <Card title="Deploy a folder">
      <div
        onDragOver={(e) => (e.preventDefault(), setOver(true))}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
        data-testid="drop-zone"
        className={`flex flex-col items-center gap-3 rounded-md border-2 border-dashed p-6 text-center text-sm ${over ? 'border-blue-500 bg-blue-50' : 'border-zinc-300'}`}
      >
        <p>Drop the folder of your site here (its index.html at the top), or pick it.</p>
        <input
          ref={input}
          type="file"
          multiple
          aria-label="Folder to deploy"
          className="sr-only"
          // A folder picker in every current browser.
          {...{ webkitdirectory: '' }}
          onChange={(e) => void send([...(e.target.files ?? [])].map((file) => ({ path: file.webkitRelativePath || file.name, file })))}
        />
        <Button onClick={() => input.current?.click()} busy={progress !== null || large !== null}>
          Choose a folder
        </Button>
        {progress !== null && (
          <div className="w-full max-w-sm">
            <Progress label="Upload" value={progress} />
          </div>
        )}
        {large !== null && <LargeProgress progress={large} />}
      </div>
      <div className="mt-3 flex flex-col gap-2">
        <ErrorNote error={error} />
        {done !== null && <Notice>{done}</Notice>}
        {homeless && (
          <p role="note" aria-label="No home page" className="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm">
            This folder has no <span className="font-mono">index.html</span> at its top, so the site’s own address answers “Page not found”
            (its other pages work). Add one and deploy again.
          </p>
        )}
        {warnings.length > 0 && (
          <RuleWarnings warnings={warnings} lead="Deployed, but these lines of the folder’s rules do not apply (the others do):" />
        )}
      </div>
    </Card>
  )
}

/** The lines of a version's `_redirects` and `_headers` that do not apply, each with its reason. */
export function RuleWarnings({ warnings, lead }: { warnings: RuleWarning[]; lead: string }) {
  return (
    <div role="note" aria-label="Lines that do not apply" className="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm">
      <p className="font-medium">{lead}</p>
      <ul className="mt-1 list-disc pl-5">
        {warnings.map((w) => (
          <li key={`${w.file}:${w.line}`}>
            <span className="font-mono">{w.file}</span>
            {w.line > 0 ? `, line ${w.line}` : ''}: {w.message}
          </li>
        ))}
      </ul>
    </div>
  )
}

/** What is being sent, once a first file is read (until then, the reading line says it all). */
const PHASES: Record<Exclude<DeployProgress['phase'], 'reading'>, string> = {
  uploading: 'Uploading',
  deploying: 'Making the draft',
  retrying: 'The connection dropped: resuming where it stopped',
}

/**
 * A ticket deploy's progress: the large files read so far (their SHA-256, before the server can say
 * which it lacks) while some are left, the folder sent in files and bytes, and the large file on its way.
 */
function LargeProgress({ progress }: { progress: DeployProgress }) {
  const { phase, reading, bytesDone, bytesTotal, filesDone, filesTotal, current } = progress
  return (
    <div className="flex w-full max-w-sm flex-col gap-1 text-left" role="status" aria-label="Deploy progress">
      {reading !== null && (
        <p className="text-sm">
          Reading files {Math.min(reading.filesDone + 1, reading.filesTotal)} of {reading.filesTotal}, {formatBytes(reading.bytesDone)} of{' '}
          {formatBytes(reading.bytesTotal)}
        </p>
      )}
      {phase !== 'reading' && (
        <p className="text-sm">
          {PHASES[phase]}: {filesDone} of {filesTotal} files, {formatBytes(bytesDone)} of {formatBytes(bytesTotal)}
        </p>
      )}
      <Progress label="Folder" value={bytesTotal === 0 ? 0 : bytesDone / bytesTotal} />
      {current !== null && (
        <>
          <p className="truncate font-mono text-xs text-zinc-700">{current.path}</p>
          <Progress label={current.path} value={current.fraction} />
        </>
      )}
    </div>
  )
}
