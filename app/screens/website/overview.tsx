import { api } from '../../api.js'
import { Link } from '../../router.js'
import { useSession } from '../../session.js'
import { formatBytes, websiteStatus, type Deployment, type Diagnostic } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { useAction, useResource } from '../../ui/data.js'
import { Badge, Button, Card, Code, ErrorNote, Loaded } from '../../ui/kit.js'
import { useWebsite } from './context.js'
import { Trash } from './settings.js'
import { DeployFolder } from './deploy.js'

/** Addresses, status, what is published and what is not yet; the deploy of a static site; a framework site's check. */
export function Overview() {
  const { website: w, reload } = useWebsite()
  const { can } = useSession()
  const publish = async () => {
    await api('POST', `/v1/websites/${w.id}/publish`)
    await reload()
  }
  const trashed = w.deletedAt !== null
  return (
    <div className="flex flex-col gap-4">
      {trashed && can('websites.manage') && <Trash />}
      {trashed && !can('websites.manage') && (
        <p className="text-sm text-zinc-700">This website is in the trash: it serves nothing until an admin restores it.</p>
      )}
      <Card title="Addresses">
        <dl className="grid gap-2 text-sm sm:grid-cols-[8rem_1fr]">
          <dt className="font-medium">Live</dt>
          <dd className="break-all">
            {w.urls.published !== null ? (
              <a href={w.urls.published} target="_blank" rel="noreferrer">
                {w.urls.published}
              </a>
            ) : (
              <span className="text-zinc-600">not published</span>
            )}
          </dd>
          {w.urls.draft !== null && !trashed && (
            <>
              <dt className="font-medium">Draft</dt>
              <dd className="break-all">
                <a href={w.urls.draft} target="_blank" rel="noreferrer">
                  {w.urls.draft}
                </a>{' '}
                <span className="text-zinc-600">(version {w.headVersion}; not indexed, not cached)</span>
              </dd>
            </>
          )}
          {w.kind === 'storage' && (
            <>
              <dt className="font-medium">Shared files</dt>
              <dd>
                <Link to={`/websites/${w.id}/files`}>Upload and share files</Link>
              </dd>
            </>
          )}
          {w.kind !== 'storage' && (
            <>
              <dt className="font-medium">Custom domains</dt>
              <dd>
                <Link to={`/websites/${w.id}/domains`}>Manage domains</Link>
              </dd>
            </>
          )}
        </dl>
      </Card>
      <Card title="Status">
        <dl className="grid gap-2 text-sm sm:grid-cols-[8rem_1fr]">
          <dt className="font-medium">Status</dt>
          <dd>
            <Badge>{websiteStatus(w)}</Badge>
            {w.suspendedReason !== null && <span className="ml-2 text-red-700">Taken down: {w.suspendedReason}</span>}
          </dd>
          {w.passwordProtected && (
            <>
              <dt className="font-medium">Password</dt>
              <dd>
                <Badge>password protected</Badge> <span className="text-zinc-700">every address asks visitors for it (Settings)</span>
              </dd>
            </>
          )}
          <dt className="font-medium">Kind</dt>
          <dd>{w.kind}</dd>
          {w.kind !== 'storage' && (
            <>
              <dt className="font-medium">Published</dt>
              <dd>{w.publishedVersion === null ? 'nothing yet' : `version ${w.publishedVersion}`}</dd>
              <dt className="font-medium">Head</dt>
              <dd>
                version {w.headVersion}
                {w.hasUnpublishedChanges ? ' (not published yet)' : ''}
                {w.buildStatus !== null && (
                  <span className="ml-2">
                    build: <Badge>{w.buildStatus}</Badge>
                  </span>
                )}
              </dd>
            </>
          )}
          <dt className="font-medium">Limits</dt>
          <dd className="text-zinc-700">
            {limitsOf(w.kind)}
            <PlanLimits kind={w.kind} />
          </dd>
        </dl>
        {w.kind !== 'storage' && w.hasUnpublishedChanges && can('publishing.manage') && w.deletedAt === null && (
          <div className="mt-3">
            <ConfirmButton
              label={`Publish version ${w.headVersion}`}
              title={`Publish version ${w.headVersion}?`}
              confirmLabel={`Publish version ${w.headVersion}`}
              tone="primary"
              onConfirm={publish}
            >
              Version {w.headVersion} goes live at {w.urls.published ?? 'the site’s address'}
              {w.publishedVersion !== null ? `, replacing version ${w.publishedVersion}` : ''}. You can roll back from Versions.
            </ConfirmButton>
          </div>
        )}
      </Card>
      {w.kind === 'static' && can('source.write') && w.deletedAt === null && (
        <DeployFolder websiteId={w.id} onDeployed={() => void reload()} />
      )}
      {w.kind === 'framework' && <Check />}
    </div>
  )
}

interface Plan {
  enabled: boolean
  plan: string | null
  limits: { websites: number | null; storageBytes: number | null; shareLinkMaxDays: number | null }
  usage: { websites: number }
}

/** What the workspace's plan allows that this website counts against (billing on only). */
function PlanLimits({ kind }: { kind: string }) {
  const { me, billingEnabled, can } = useSession()
  const plan = useResource(`plan:${me.organization.id}:${billingEnabled}`, (signal) =>
    billingEnabled && can('billing.read') ? api<Plan>('GET', '/v1/billing', { signal }) : Promise.resolve(null),
  )
  const p = plan.data
  if (p == null || !p.enabled) return null
  const limit = (n: number | null) => (n === null ? 'unlimited' : String(n))
  return (
    <span className="block">
      {kind === 'storage'
        ? `The ${p.plan} plan: ${p.limits.storageBytes === null ? 'unlimited storage' : `${formatBytes(p.limits.storageBytes)} of storage`}${p.limits.shareLinkMaxDays === null ? '' : `, links up to ${p.limits.shareLinkMaxDays} days`}.`
        : `The ${p.plan} plan: ${p.usage.websites} of ${limit(p.limits.websites)} websites in use.`}
    </span>
  )
}

function limitsOf(kind: string): string {
  if (kind === 'static') return 'up to 2,000 files; a file over 1 MiB is sent once, by its hash, up to the plan’s largest file'
  if (kind === 'storage') return 'files up to 100 MiB each, within the workspace’s storage'
  return 'pages render in 5 s of CPU and 256 MB each; packages at the versions the platform pins'
}

/** A framework site's head: its build, and the last check's diagnostics with file and line. */
function Check() {
  const { website: w, reload } = useWebsite()
  const status = useResource(`deployment:${w.id}:${w.headVersion}`, (signal) =>
    api<Deployment>('GET', `/v1/websites/${w.id}/deployments/status`, { query: { target: 'head' }, signal }),
  )
  const check = useAction(async () => {
    const result = await api<{ ok: boolean; diagnostics: Diagnostic[] }>('POST', `/v1/websites/${w.id}/head/check`)
    status.setData({ ...(status.data as Deployment), diagnostics: result.diagnostics, status: result.ok ? 'ready' : 'failed' })
    await reload()
  })
  return (
    <Card
      title={`Check of version ${w.headVersion}`}
      actions={
        <Button onClick={() => void check.run()} busy={check.busy}>
          Run the check
        </Button>
      }
    >
      <ErrorNote error={check.error} />
      <Loaded resource={status}>
        {(d) => (
          <div className="flex flex-col gap-2 text-sm">
            <p>
              Build: <Badge>{d.status}</Badge> {d.canPublish ? 'ready to publish' : ''}
            </p>
            {d.diagnostics.length === 0 ? (
              <p className="text-zinc-600">No diagnostics.</p>
            ) : (
              <ul aria-label="Diagnostics" className="flex flex-col gap-1">
                {d.diagnostics.map((diagnostic, i) => (
                  <li key={i} className={diagnostic.severity === 'error' ? 'text-red-800' : 'text-amber-800'}>
                    <Code>
                      {[diagnostic.file, diagnostic.line, diagnostic.column].filter((p) => p !== undefined).join(':') || diagnostic.step}
                    </Code>{' '}
                    {diagnostic.severity} ({diagnostic.step}): {diagnostic.message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </Loaded>
    </Card>
  )
}
