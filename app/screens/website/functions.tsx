import { useEffect, useRef, useState, type FormEvent } from 'react'
import { api, type ApiError } from '../../api.js'
import { useSession } from '../../session.js'
import { formatBytes, type FunctionLogLine, type FunctionsOfVersion, type FunctionsSummary, type FunctionVariable } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { useAction, useResource } from '../../ui/data.js'
import { Badge, Button, Card, Code, Empty, ErrorNote, Field, Loaded, Table, Td, Time } from '../../ui/kit.js'
import { useWebsite } from './context.js'

/** The longest a follow's request waits for a new line (the API allows 30 s). */
const FOLLOW_WAIT_SECONDS = 25
/** How long a follow waits after a failed read before it reads again. */
const RETRY_MS = 5000
/** Lines the screen keeps while following. */
const LINES_KEPT = 500

/**
 * The site's functions: the routes of the head and published versions, the variables and secrets they
 * read as env (a secret never shown back), the key-value store's size, and the logs, followed live.
 */
export function Functions() {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const summary = useResource(`functions:${w.id}:${w.headVersion}:${w.publishedVersion}`, (signal) =>
    api<FunctionsSummary>('GET', `/v1/websites/${w.id}/functions`, { signal }),
  )
  const write = can('source.write') && w.deletedAt === null
  return (
    <div className="flex flex-col gap-4">
      <Loaded resource={summary}>
        {(s) => (
          <>
            <Routes summary={s} />
            <Variables variables={s.variables} write={write} onChange={() => void summary.reload()} />
            <Card title="Key-value store">
              <p className="text-sm text-zinc-700">
                {s.kv.keys === 0
                  ? 'Empty. Functions write to it with env.KV.put(key, value).'
                  : `${s.kv.keys.toLocaleString('en')} ${s.kv.keys === 1 ? 'key' : 'keys'}, ${formatBytes(s.kv.bytes)} in all.`}
              </p>
            </Card>
          </>
        )}
      </Loaded>
      <Logs />
    </div>
  )
}

function Routes({ summary: s }: { summary: FunctionsSummary }) {
  const same = s.published !== null && s.published.version === s.head.version
  return (
    <Card title="Routes">
      {s.head.routes.length === 0 && (s.published === null || s.published.routes.length === 0) ? (
        <Empty>
          No functions. Deploy a <Code>functions/</Code> folder with the site: <Code>functions/api/hello.ts</Code> exporting{' '}
          <Code>onRequest</Code> answers <Code>/api/hello</Code>.
        </Empty>
      ) : (
        <div className="flex flex-col gap-4">
          <RouteTable title={`Version ${s.head.version} (head${same ? ', live' : ''})`} functions={s.head} />
          {s.published !== null && !same && <RouteTable title={`Version ${s.published.version} (live)`} functions={s.published} />}
        </div>
      )}
    </Card>
  )
}

function RouteTable({ title, functions: { routes, typeProblems } }: { title: string; functions: FunctionsOfVersion }) {
  return (
    <div>
      <h3 className="mb-1 text-sm font-semibold">{title}</h3>
      {typeProblems.length > 0 && (
        <div
          role="note"
          aria-label={`Type errors in ${title}`}
          className="mb-2 rounded-md border border-amber-200 bg-amber-50 px-3 py-2 text-sm text-amber-900"
        >
          <p>These type errors do not stop the functions from running, but the code may not do what its types say:</p>
          <ul className="mt-1 list-disc pl-5">
            {typeProblems.map((p) => (
              <li key={`${p.file}:${p.line}:${p.column}`}>
                <Code>
                  {p.file}, line {p.line}
                </Code>
                : {p.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      {routes.length === 0 ? (
        <p className="text-sm text-zinc-600">No functions in this version.</p>
      ) : (
        <Table caption={`Function routes of ${title}`} head={['Route', 'Methods', 'File']}>
          {routes.map((r) => (
            <tr key={`${r.file} ${r.route}`}>
              <Td>
                <Code>{r.route}</Code> {r.middleware && <Badge>middleware</Badge>}
              </Td>
              <Td>{r.methods.length === 0 ? 'any' : r.methods.join(', ')}</Td>
              <Td>
                <Code>{r.file}</Code>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </div>
  )
}

function Variables({ variables, write, onChange }: { variables: FunctionVariable[]; write: boolean; onChange: () => void }) {
  const { website: w } = useWebsite()
  const [secret, setSecret] = useState(false)
  const set = useAction(async (name: string, value: string, asSecret: boolean) => {
    await api('PUT', `/v1/websites/${w.id}/functions/variables/${encodeURIComponent(name)}`, { body: { value, secret: asSecret } })
    onChange()
  })
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = event.currentTarget
    const data = new FormData(form)
    if (await set.run(String(data.get('name')).trim(), String(data.get('value')), secret)) {
      form.reset()
      setSecret(false)
    }
  }
  return (
    <Card title="Variables and secrets">
      <p className="mb-3 text-sm text-zinc-700">
        Functions read these as <Code>env.NAME</Code> from their next request on, on the draft and live addresses alike. A secret is kept
        sealed and never shown again, here or anywhere.
      </p>
      {variables.length === 0 ? (
        <Empty>No variables yet.</Empty>
      ) : (
        <Table caption="Variables and secrets" head={['Name', 'Value', 'Changed', '']}>
          {variables.map((v) => (
            <tr key={v.name}>
              <Td>
                <Code>{v.name}</Code>
              </Td>
              <Td>{v.secret ? <Badge>secret</Badge> : <Code>{v.value}</Code>}</Td>
              <Td>
                <Time at={v.updatedAt} />
              </Td>
              <Td className="text-right">
                {write && (
                  <ConfirmButton
                    label={`Delete ${v.name}`}
                    title={`Delete ${v.name}?`}
                    confirmLabel="Delete"
                    tone="danger"
                    onConfirm={async () => {
                      await api('DELETE', `/v1/websites/${w.id}/functions/variables/${encodeURIComponent(v.name)}`)
                      onChange()
                    }}
                  >
                    Functions no longer see env.{v.name} from their next request on.
                  </ConfirmButton>
                )}
              </Td>
            </tr>
          ))}
        </Table>
      )}
      {write && (
        <form onSubmit={submit} className="mt-4 flex flex-wrap items-end gap-2" aria-label="Set a variable">
          <Field label="Name" name="name" required maxLength={64} placeholder="API_TOKEN" error={set.error} className="w-48" />
          <Field
            label="Value"
            name="value"
            type={secret ? 'password' : 'text'}
            autoComplete="off"
            error={set.error}
            className="min-w-0 flex-1 sm:max-w-sm"
          />
          <label className="flex items-center gap-2 py-1.5 text-sm">
            <input type="checkbox" checked={secret} onChange={(e) => setSecret(e.target.checked)} /> Secret
          </label>
          <Button type="submit" tone="primary" busy={set.busy}>
            Set
          </Button>
        </form>
      )}
      <div className="mt-2">
        <ErrorNote error={set.error} fields={['name', 'value']} />
      </div>
    </Card>
  )
}

/** The newest lines, and while "Follow" is on, each new line as it comes (the API's long poll). */
function Logs() {
  const { website: w } = useWebsite()
  const [lines, setLines] = useState<FunctionLogLine[] | null>(null)
  const [error, setError] = useState<ApiError | null>(null)
  const [follow, setFollow] = useState(true)
  // Where the lines shown end (the API's cursor): a follow asks only for the lines after it.
  const cursor = useRef<string | undefined>(undefined)
  useEffect(() => {
    const controller = new AbortController()
    const read = async (wait: number) => {
      const query: Record<string, string | number> = { limit: 100 }
      if (cursor.current !== undefined) Object.assign(query, { cursor: cursor.current, wait })
      const page = await api<{ logs: FunctionLogLine[]; cursor: string }>('GET', `/v1/websites/${w.id}/functions/logs`, {
        query,
        signal: controller.signal,
      })
      cursor.current = page.cursor
      setLines((shown) => [...(shown ?? []), ...page.logs].slice(-LINES_KEPT))
      setError(null)
    }
    const run = async () => {
      for (let first = true; first || (follow && !controller.signal.aborted); first = false) {
        try {
          await read(first ? 0 : FOLLOW_WAIT_SECONDS)
        } catch (caught) {
          if (controller.signal.aborted) return
          setError(caught as ApiError)
          // A follow that failed (the server restarting, the network gone) tries again in a few seconds.
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS))
        }
      }
    }
    void run()
    return () => controller.abort()
  }, [w.id, follow])
  return (
    <Card
      title="Logs"
      actions={
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow new lines
        </label>
      }
    >
      <ErrorNote error={error} />
      {lines === null ? null : lines.length === 0 ? (
        <Empty>No lines yet. Each request to a function writes one, with what it printed and any error.</Empty>
      ) : (
        <ol aria-label="Function logs" className="flex flex-col divide-y divide-zinc-100 font-mono text-xs">
          {[...lines].reverse().map((line, i) => (
            <li key={`${line.at} ${line.requestId} ${i}`} className="flex flex-wrap gap-x-3 py-1">
              <Time at={line.at} />
              <span className={line.level === 'error' || line.type === 'exception' ? 'text-red-700' : 'text-zinc-600'}>
                {line.type === 'invocation' ? line.status : line.level}
              </span>
              <span>
                {line.method} {line.path}
              </span>
              {line.node !== undefined && <span className="text-zinc-600">on {line.node}</span>}
              <span className="w-full break-all whitespace-pre-wrap">{line.type === 'invocation' ? invocation(line) : line.message}</span>
            </li>
          ))}
        </ol>
      )}
    </Card>
  )
}

/** A request's line in words: its duration, CPU time, a cold start, the limit it went over. */
function invocation(line: FunctionLogLine): string {
  const parts = [`${line.durationMs ?? 0} ms`, `${line.cpuMs ?? 0} ms CPU`]
  if (line.cold === true) parts.push('cold start')
  if (line.limit !== undefined) parts.push(`stopped: over its ${line.limit} limit`)
  return parts.join(' · ')
}
