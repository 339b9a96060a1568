import { useEffect, useRef, useState } from 'react'
import { api } from '../../api.js'
import { useSession } from '../../session.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction, useResource } from '../../ui/data.js'
import { Button, Card, Code, ErrorNote, Loaded } from '../../ui/kit.js'
import { useWebsite } from './context.js'

interface Ranked {
  name: string
  pageviews: number
}

interface Report {
  sources: { pageviews: string; visits: string; visitors: string | null }
  unit: 'hour' | 'day'
  totals: {
    pageviews: number
    visitors: number | null
    visits: number
    bounces: number | null
    totaltime: number | null
    events: number | null
  }
  series: { x: string; y: number }[]
  pages: Ranked[]
  referrers: Ranked[]
  countries: Ranked[]
  devices: Ranked[]
  browsers?: Ranked[]
  events?: { name: string; events: number; visitors: number }[]
}

const PERIODS = [
  ['24h', '24 hours'],
  ['7d', '7 days'],
  ['30d', '30 days'],
  ['90d', '90 days'],
] as const

/** Page views and visitors over a period as a chart, the top lists, the last 30 minutes, and the share link. */
export function Analytics() {
  const { website: w } = useWebsite()
  const [period, setPeriod] = useState<(typeof PERIODS)[number][0]>('7d')
  const report = useResource(`analytics:${w.id}:${period}`, (signal) =>
    api<Report>('GET', `/v1/websites/${w.id}/analytics`, { query: { period }, signal }),
  )
  const realtime = useResource(`realtime:${w.id}`, (signal) =>
    api<{ views: number; visitors: number | null }>('GET', `/v1/websites/${w.id}/analytics/realtime`, { signal }),
  )
  return (
    <div className="flex flex-col gap-4">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <div role="group" aria-label="Period" className="flex flex-wrap gap-1">
          {PERIODS.map(([value, label]) => (
            <Button
              key={value}
              tone={period === value ? 'primary' : 'secondary'}
              aria-pressed={period === value}
              onClick={() => setPeriod(value)}
            >
              {label}
            </Button>
          ))}
        </div>
        <p className="text-sm text-zinc-700" aria-live="polite">
          Now: <strong data-testid="realtime">{realtime.data?.views ?? '…'}</strong> page views in the last 30 minutes
        </p>
      </div>
      <Loaded resource={report}>
        {(r) => (
          <>
            <Card title="Page views">
              <dl className="mb-3 flex flex-wrap gap-x-6 gap-y-1 text-sm">
                <div>
                  <dt className="text-zinc-600">Page views</dt>
                  <dd className="text-2xl font-semibold" data-testid="pageviews">
                    {r.totals.pageviews}
                  </dd>
                </div>
                <div>
                  <dt className="text-zinc-600">Visits</dt>
                  <dd className="text-2xl font-semibold">{r.totals.visits}</dd>
                </div>
                {r.totals.visitors !== null && (
                  <div>
                    <dt className="text-zinc-600">Visitors</dt>
                    <dd className="text-2xl font-semibold">{r.totals.visitors}</dd>
                  </div>
                )}
              </dl>
              <Chart series={r.series} unit={r.unit} />
              <p className="mt-2 text-xs text-zinc-600">
                Page views are every published page served (bots and previews left out)
                {r.sources.visitors === 'tracker' ? '; visitors come from the site’s own tracker' : ''}.
              </p>
            </Card>
            <div className="grid gap-4 md:grid-cols-2">
              <Top title="Pages" rows={r.pages} />
              <Top title="Referrers" rows={r.referrers} />
              <Top title="Countries" rows={r.countries} />
              <Top title="Devices" rows={r.devices} />
              {r.browsers !== undefined && <Top title="Browsers" rows={r.browsers} />}
              {r.events !== undefined && <Top title="Events" rows={r.events.map((e) => ({ name: e.name, pageviews: e.events }))} />}
            </div>
          </>
        )}
      </Loaded>
      <Share />
    </div>
  )
}

function Top({ title, rows }: { title: string; rows: Ranked[] }) {
  return (
    <Card title={title}>
      {rows.length === 0 ? (
        <p className="text-sm text-zinc-600">Nothing yet.</p>
      ) : (
        <table className="w-full text-sm">
          <caption className="sr-only">{title}</caption>
          <thead className="sr-only">
            <tr>
              <th scope="col">{title}</th>
              <th scope="col">Count</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.name} className="border-b border-zinc-100 last:border-0">
                <td className="py-1 pr-2 break-all">{row.name}</td>
                <td className="py-1 text-right tabular-nums">{row.pageviews}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  )
}

/** The series drawn with uPlot, loaded with this screen only (the first load stays small). */
function Chart({ series, unit }: { series: { x: string; y: number }[]; unit: 'hour' | 'day' }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    let chart: { destroy(): void } | undefined
    let gone = false
    void import('uplot').then(({ default: UPlot }) => {
      if (gone || box.current === null) return
      const width = Math.max(280, box.current.clientWidth)
      chart = new UPlot(
        {
          width,
          height: 220,
          series: [{}, { label: 'Page views', stroke: '#2563eb', fill: 'rgba(37,99,235,0.12)', width: 2 }],
          axes: [{ space: unit === 'hour' ? 60 : 50 }, {}],
          legend: { show: false },
        },
        [series.map((p) => Date.parse(p.x) / 1000), series.map((p) => p.y)],
        box.current,
      )
    })
    return () => {
      gone = true
      chart?.destroy()
    }
  }, [series, unit])
  const total = series.reduce((n, p) => n + p.y, 0)
  return (
    <div
      ref={box}
      role="img"
      aria-label={`Page views per ${unit}: ${total} in all`}
      data-testid="chart"
      className="min-h-[220px] w-full overflow-hidden"
    />
  )
}

/** The read-only dashboard behind an unguessable link: on (a new link), or off (the link stops working). */
function Share() {
  const { website: w, reload } = useWebsite()
  const { can } = useSession()
  const share = useAction(async (on: boolean) => {
    await api(on ? 'POST' : 'DELETE', `/v1/websites/${w.id}/analytics/share`)
    await reload()
  })
  const url = w.analytics.dashboardUrl
  return (
    <Card title="Public dashboard">
      <p className="mb-2 text-sm text-zinc-700">Anyone with the link sees these figures, read-only, without signing in.</p>
      {url !== null && (
        <p className="mb-2 flex flex-wrap items-center gap-2 text-sm">
          <Code>{url}</Code> <CopyButton text={url} label="the dashboard link" />
        </p>
      )}
      {can('publishing.manage') && (
        <div className="flex gap-2">
          <Button onClick={() => void share.run(true)} busy={share.busy}>
            {url === null ? 'Turn on the link' : 'Make a new link'}
          </Button>
          {url !== null && (
            <Button tone="danger" onClick={() => void share.run(false)} busy={share.busy}>
              Turn off the link
            </Button>
          )}
        </div>
      )}
      <ErrorNote error={share.error} />
      {w.kind === 'static' && !w.analytics.tracking && (
        <p className="mt-3 text-sm text-zinc-700">
          For visitors and custom events, add the tracker to your pages: <Code>{w.analytics.snippet}</Code>{' '}
          <CopyButton text={w.analytics.snippet} label="the tracker snippet" />
        </p>
      )}
    </Card>
  )
}
