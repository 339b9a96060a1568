import { useEffect, type ReactNode } from 'react'
import { api, setWorkspace } from './api.js'
import { Link, match, navigate, useLocation } from './router.js'
import { useResource } from './ui/data.js'
import { cx, ErrorNote, Loading, Notice } from './ui/kit.js'
import { Account } from './screens/account.js'
import { Audit } from './screens/audit.js'
import { Billing } from './screens/billing.js'
import { Home } from './screens/home.js'
import { Keys } from './screens/keys.js'
import { Members } from './screens/members.js'
import { WebsiteScreens } from './screens/website/index.js'
import { SessionContext, useSession, type Me, type Session } from './session.js'

/** The screens, by path below /app. */
function Screen({ path }: { path: string }) {
  if (path === '') return <Home />
  const website =
    match('/websites/:id', path) ??
    match('/websites/:id/:tab', path) ??
    match('/websites/:id/:tab/:a', path) ??
    match('/websites/:id/:tab/:a/:b', path)
  if (website !== null) return <WebsiteScreens id={website.id} tab={website.tab ?? ''} a={website.a} b={website.b} />
  if (path === '/keys') return <Keys />
  if (path === '/members') return <Members />
  if (path === '/audit') return <Audit />
  if (path === '/billing') return <Billing />
  if (path === '/account') return <Account />
  return (
    <div>
      <h1 className="text-xl font-semibold">Not found</h1>
      <p className="mt-2 text-sm">
        There is no dashboard page at this address. <Link to="">Go to your websites</Link>.
      </p>
    </div>
  )
}

export function App() {
  const { path, query } = useLocation()
  const workspace = query.get('workspace')
  setWorkspace(workspace)
  const me = useResource(`me:${workspace ?? ''}`, (signal) => api<Me>('GET', '/v1/me', { signal }))
  const billing = useResource(`billing:${workspace ?? ''}`, (signal) =>
    api<{ enabled: boolean }>('GET', '/v1/billing', { signal }).catch(() => ({ enabled: false })),
  )
  // The workspace in use is where the next sign-in lands (a person who joined one keeps landing there).
  const last = me.data?.person?.lastWorkspaceId
  useEffect(() => {
    const person = me.data?.person
    if (person === undefined || me.data?.organization.id !== (workspace ?? person.personalWorkspaceId)) return
    const now = workspace === null || workspace === person.personalWorkspaceId ? null : workspace
    if (now !== (last ?? null)) void api('PATCH', '/v1/me', { body: { lastWorkspaceId: now } }).catch(() => undefined)
  }, [workspace, last, me.data])
  useEffect(() => {
    const title = path === '' ? 'Websites' : path.split('/')[1]
    document.title = `${title.charAt(0).toUpperCase()}${title.slice(1)} · Plinth`
  }, [path])
  if (me.data === undefined) {
    return <main className="p-6">{me.error !== null ? <ErrorNote error={me.error} /> : <Loading what="Signing in" />}</main>
  }
  const session: Session = {
    me: me.data,
    billingEnabled: billing.data?.enabled ?? false,
    can: (capability) => me.data!.capabilities.includes(capability),
    refresh: me.reload,
  }
  return (
    <SessionContext.Provider value={session}>
      <Layout path={path} joined={query.get('joined') === '1'}>
        <Screen path={path} />
      </Layout>
    </SessionContext.Provider>
  )
}

function NavLink({ to, current, children }: { to: string; current: boolean; children: ReactNode }) {
  return (
    <Link
      to={to}
      aria-current={current ? 'page' : undefined}
      className={cx(
        'block rounded-md px-3 py-1.5 text-sm text-zinc-800 no-underline hover:bg-zinc-200 hover:no-underline',
        current && 'bg-zinc-200 font-semibold',
      )}
    >
      {children}
    </Link>
  )
}

function Layout({ path, joined, children }: { path: string; joined: boolean; children: ReactNode }) {
  const { me, can, billingEnabled } = useSession()
  const items: [string, string, boolean][] = [
    ['', 'Websites', true],
    ['/keys', 'API keys', can('apiKeys.manage')],
    ['/members', 'Members', can('members.manage')],
    ['/audit', 'Audit log', can('auditLog.read')],
    ['/billing', 'Billing', billingEnabled && can('billing.read')],
    ['/account', 'Account', true],
  ]
  const section = path === '' || path.startsWith('/websites') ? '' : `/${path.split('/')[1]}`
  const workspaces = me.workspaces ?? []
  return (
    <div className="min-h-screen">
      <a
        href="#main"
        className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:z-10 focus:rounded focus:bg-white focus:p-2"
      >
        Skip to content
      </a>
      <header className="border-b border-zinc-200 bg-white">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center gap-3 px-4 py-2">
          <Link to="" className="text-lg font-bold text-zinc-900 no-underline">
            Plinth
          </Link>
          {workspaces.length > 0 && (
            <label className="order-last flex w-full min-w-0 items-center gap-2 text-sm sm:order-none sm:w-auto">
              <span className="sr-only sm:not-sr-only">Workspace</span>
              <select
                aria-label="Workspace"
                value={me.organization.id}
                onChange={(event) => navigate(`?workspace=${event.target.value}`)}
                className="w-full min-w-0 rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm sm:w-auto sm:max-w-[12rem]"
              >
                {workspaces.map((w) => (
                  <option key={w.id} value={w.id}>
                    {w.name}
                    {w.personal ? ' (personal)' : ''}
                  </option>
                ))}
              </select>
            </label>
          )}
          <div className="ml-auto flex items-center gap-3 text-sm">
            <span className="max-w-[9rem] truncate text-zinc-700 sm:max-w-[16rem]">{me.person?.name || me.person?.email}</span>
            <a href="/docs">Docs</a>
            <form method="post" action="/app/sign-out">
              <button type="submit" className="rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm hover:bg-zinc-100">
                Sign out
              </button>
            </form>
          </div>
        </div>
      </header>
      <div className="mx-auto flex max-w-6xl flex-col gap-4 px-4 py-4 md:flex-row">
        <nav aria-label="Dashboard" className="md:w-44 md:shrink-0">
          <ul className="flex flex-wrap gap-1 md:flex-col">
            {items
              .filter(([, , shown]) => shown)
              .map(([to, label]) => (
                <li key={to}>
                  <NavLink to={to} current={section === to}>
                    {label}
                  </NavLink>
                </li>
              ))}
          </ul>
        </nav>
        <main id="main" className="min-w-0 flex-1">
          {joined && (
            <div className="mb-4">
              <Notice>
                You joined {me.organization.name} as {me.access.role.replace(/_/g, ' ')}. You are working in it now; the Workspace menu
                switches between your workspaces.
              </Notice>
            </div>
          )}
          {children}
        </main>
      </div>
    </div>
  )
}
