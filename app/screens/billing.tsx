import { api } from '../api.js'
import { useSession } from '../session.js'
import { formatBytes } from '../types.js'
import { useAction, useResource } from '../ui/data.js'
import { Button, Card, ErrorNote, Loaded, Notice, PageTitle } from '../ui/kit.js'
import { useLocation } from '../router.js'

interface BillingState {
  enabled: boolean
  plan: 'free' | 'base' | 'max' | null
  comped: boolean
  limits: { websites: number | null; storageBytes: number | null; shareLinkMaxDays: number | null }
  usage: { websites: number }
  checkoutAvailable: boolean
}

/** The workspace's plan, limits and usage; checkout and the billing portal through the payment provider. */
export function Billing() {
  const { me, can } = useSession()
  const { query } = useLocation()
  const checkout = query.get('checkout')
  // Back from the payment provider's checkout: the subscription is pulled in before the plan is shown.
  const billing = useResource(`billing-screen:${me.organization.id}:${checkout ?? ''}`, async (signal) => {
    if (checkout === 'success') await api('POST', '/v1/billing/sync', { signal })
    return api<BillingState>('GET', '/v1/billing', { signal })
  })
  const go = useAction(async (what: 'checkout' | 'portal' | 'sync', plan?: 'base' | 'max') => {
    const answer = await api<{ url?: string }>('POST', `/v1/billing/${what}`, { body: plan === undefined ? {} : { plan } })
    if (answer.url !== undefined) location.assign(answer.url)
    else await billing.reload()
  })
  const limit = (n: number | null) => (n === null ? 'unlimited' : String(n))
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>Billing of {me.organization.name}</PageTitle>
      {checkout === 'success' && billing.data !== undefined && (
        <Notice>Thank you: your payment went through and the plan below is up to date.</Notice>
      )}
      {checkout === 'cancelled' && <Notice>Checkout cancelled: nothing was charged.</Notice>}
      <Loaded resource={billing}>
        {(b) =>
          !b.enabled ? (
            <p className="text-sm">Billing is off on this server: there are no plans and nothing is limited.</p>
          ) : (
            <Card title={`Plan: ${b.plan ?? 'none'}${b.comped ? ' (comped)' : ''}`}>
              <dl className="grid gap-1 text-sm sm:grid-cols-[10rem_1fr]">
                <dt className="font-medium">Websites</dt>
                <dd>
                  {b.usage.websites} of {limit(b.limits.websites)}
                </dd>
                <dt className="font-medium">Shared-file storage</dt>
                <dd>{b.limits.storageBytes === null ? 'unlimited' : formatBytes(b.limits.storageBytes)}</dd>
                <dt className="font-medium">Shared links last</dt>
                <dd>{b.limits.shareLinkMaxDays === null ? 'as long as you keep them' : `up to ${b.limits.shareLinkMaxDays} days`}</dd>
              </dl>
              {can('billing.manage') && b.checkoutAvailable ? (
                <div className="mt-3 flex flex-wrap gap-2">
                  {b.plan === 'free' ? (
                    <>
                      <Button tone="primary" onClick={() => void go.run('checkout', 'base')} busy={go.busy}>
                        Upgrade to Base
                      </Button>
                      <Button onClick={() => void go.run('checkout', 'max')} busy={go.busy}>
                        Upgrade to Max
                      </Button>
                    </>
                  ) : (
                    <Button onClick={() => void go.run('portal')} busy={go.busy}>
                      Manage subscription
                    </Button>
                  )}
                  <Button onClick={() => void go.run('sync')} busy={go.busy}>
                    Refresh plan
                  </Button>
                </div>
              ) : (
                <p className="mt-3 text-sm text-zinc-600">
                  {b.checkoutAvailable
                    ? 'Only an admin of this workspace changes its plan.'
                    : 'Online payment is not set up on this server; the operator changes plans with plinth plan set.'}
                </p>
              )}
              <div className="mt-2">
                <ErrorNote error={go.error} />
              </div>
            </Card>
          )
        }
      </Loaded>
    </div>
  )
}
