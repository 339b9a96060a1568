import { api } from '../../api.js'
import { Link } from '../../router.js'
import { websiteStatus, type Website } from '../../types.js'
import { useResource } from '../../ui/data.js'
import { Badge, cx, ErrorNote, Loading, PageTitle } from '../../ui/kit.js'
import { Analytics } from './analytics.js'
import { Domains } from './domains.js'
import { Files } from './files.js'
import { Forms } from './forms.js'
import { Functions } from './functions.js'
import { Overview } from './overview.js'
import { Settings } from './settings.js'
import { Versions } from './versions.js'
import { WebsiteContext } from './context.js'

const TABS: [string, string, (w: Website) => boolean][] = [
  ['', 'Overview', () => true],
  ['versions', 'Versions', (w) => w.kind !== 'storage'],
  ['files', 'Files', (w) => w.kind === 'storage'],
  ['analytics', 'Analytics', (w) => w.kind !== 'storage'],
  ['forms', 'Forms', (w) => w.kind !== 'storage'],
  ['functions', 'Functions', (w) => w.kind !== 'storage'],
  ['domains', 'Domains', (w) => w.kind !== 'storage'],
  ['settings', 'Settings', () => true],
]

export function WebsiteScreens({ id, tab, a, b }: { id: string; tab: string; a?: string; b?: string }) {
  const website = useResource(`website:${id}`, (signal) => api<Website>('GET', `/v1/websites/${id}`, { signal }))
  if (website.data === undefined) return website.error !== null ? <ErrorNote error={website.error} /> : <Loading />
  const w = website.data
  const tabs = TABS.filter(([, , shown]) => shown(w))
  return (
    <WebsiteContext.Provider value={website}>
      <div className="flex flex-col gap-4">
        <div>
          <Link to="" className="text-sm">
            ← Websites
          </Link>
          <PageTitle>
            <span className="mr-2">{w.name}</span>
            <Badge>{websiteStatus(w)}</Badge>
          </PageTitle>
          <nav aria-label="Website" className="-mt-2 border-b border-zinc-200">
            <ul className="flex flex-wrap gap-x-1">
              {tabs.map(([to, label]) => (
                <li key={to}>
                  <Link
                    to={`/websites/${w.id}${to === '' ? '' : `/${to}`}`}
                    aria-current={tab === to ? 'page' : undefined}
                    className={cx(
                      'inline-block border-b-2 px-3 py-2 text-sm text-zinc-700 no-underline hover:text-zinc-900 hover:no-underline',
                      tab === to ? 'border-zinc-900 font-semibold text-zinc-900' : 'border-transparent',
                    )}
                  >
                    {label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        </div>
        {tab === '' && <Overview />}
        {tab === 'versions' && <Versions />}
        {tab === 'files' && <Files folder={a ?? ''} />}
        {tab === 'analytics' && <Analytics />}
        {tab === 'forms' && <Forms form={a} submissionId={b} />}
        {tab === 'functions' && <Functions />}
        {tab === 'domains' && <Domains />}
        {tab === 'settings' && <Settings />}
      </div>
    </WebsiteContext.Provider>
  )
}
