import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addPerson, setUpOwner } from '../helpers/people.js'
import { startServer } from '../helpers/server.js'
import { StripeStandIn } from '../helpers/stripe.js'

const SECRET = 'sk_test_plinth_standin'

async function billedServer(t: Parameters<typeof startServer>[0]) {
  const stripe = await new StripeStandIn(SECRET).start(t)
  const server = await startServer(t, {
    PLINTH_BILLING: 'on',
    PLINTH_PLAN_WEBSITES: 'free=1,base=5,max=25',
    PLINTH_STRIPE_SECRET_KEY: SECRET,
    PLINTH_STRIPE_PRICE_BASE: 'price_base_monthly',
    PLINTH_STRIPE_PRICE_MAX: 'price_max_monthly',
    PLINTH_STRIPE_API_URL: stripe.origin,
  })
  return { stripe, server }
}

test('Stripe: checkout answers the provider URL, paying and sync raise the plan, the portal opens, a cancelled subscription drops it to free', async (t) => {
  const { stripe, server } = await billedServer(t)
  const orgId = server.plinth.installation.orgId
  const owner = await setUpOwner(server)
  assert.equal((await server.api('POST', '/v1/websites', { body: { name: 'one' } })).status, 201)
  assert.equal(
    (await server.api('POST', '/v1/websites', { body: { name: 'two' } })).body.details.reason,
    'plan_limit',
    'the free plan holds one website',
  )

  const before = await owner.api('GET', '/v1/billing')
  assert.deepEqual([before.body.plan, before.body.checkoutAvailable, before.body.limits.websites], ['free', true, 1])
  assert.equal(
    (await server.api('POST', '/v1/billing/checkout', { body: { plan: 'base' } })).body.details.reason,
    'user_required',
    'an API key cannot pay',
  )
  assert.equal((await owner.api('POST', '/v1/billing/checkout', { plan: 'gold' })).status, 400)

  const checkout = await owner.api('POST', '/v1/billing/checkout', { plan: 'base' })
  assert.equal(checkout.status, 200, JSON.stringify(checkout.body))
  assert.match(checkout.body.url, /^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_/)
  const customerCall = stripe.calls.find((c) => c.path === '/v1/customers')
  assert.ok(customerCall !== undefined, 'a Stripe customer is created at the first checkout')
  assert.equal(customerCall.form.get('email'), 'owner@example.com')
  assert.equal(customerCall.form.get('metadata[orgId]'), orgId)
  const sessionCall = stripe.calls.filter((c) => c.path === '/v1/checkout/sessions').at(-1)!
  assert.equal(sessionCall.form.get('mode'), 'subscription')
  assert.equal(sessionCall.form.get('line_items[0][price]'), 'price_base_monthly')
  assert.equal(sessionCall.form.get('client_reference_id'), orgId)
  const successUrl = new URL(sessionCall.form.get('success_url')!)
  // Back to the dashboard's billing screen of this workspace, which syncs (tested in test/app/dashboard.test.ts).
  assert.equal(successUrl.pathname, '/app/billing')
  assert.equal(successUrl.searchParams.get('workspace'), orgId)
  assert.equal(successUrl.searchParams.get('checkout'), 'success')
  assert.ok(
    stripe.calls.every((c) => c.authorization === `Bearer ${SECRET}`),
    'the secret key goes in the Authorization header only',
  )

  // A second checkout reuses the organization's customer.
  await owner.api('POST', '/v1/billing/checkout', { plan: 'max' })
  assert.equal(stripe.calls.filter((c) => c.path === '/v1/customers').length, 1)
  assert.equal((await owner.api('GET', '/v1/billing')).body.plan, 'free', 'nothing changes before the person pays')

  // The person pays; back on the success URL the dashboard pulls the subscription in (billing.sync).
  stripe.complete(/cs_[a-z0-9]+$/.exec(checkout.body.url)![0])
  assert.equal((await owner.api('POST', '/v1/billing/sync')).body.plan, 'base')
  const paid = await owner.api('GET', '/v1/billing')
  assert.deepEqual([paid.body.plan, paid.body.limits.websites], ['base', 5])
  assert.equal((await server.api('POST', '/v1/websites', { body: { name: 'two' } })).status, 201, 'the paid plan has room')
  const audit = await server.api('GET', '/v1/audit-log?eventType=billing.plan_changed')
  assert.deepEqual(
    audit.body.items.map((e: any) => [e.actor.kind, e.metadata.from, e.metadata.to]),
    [['user', 'free', 'base']],
  )

  const portal = await owner.api('POST', '/v1/billing/portal')
  assert.equal(portal.status, 200)
  assert.match(portal.body.url, /^https:\/\/billing\.stripe\.test\/p\/session\/bps_/)
  assert.equal(
    stripe.calls.at(-1)!.form.get('customer'),
    sessionCall.form.get('customer'),
    'the portal opens for the organization’s customer',
  )

  // Cancelled in the portal: the next sync drops the plan to free.
  stripe.subscriptions[0].status = 'canceled'
  const sync = await owner.api('POST', '/v1/billing/sync')
  assert.equal(sync.status, 200)
  assert.equal(sync.body.plan, 'free')
  assert.equal((await owner.api('GET', '/v1/billing')).body.plan, 'free')
})

test('Stripe: a person who administers nothing in a workspace cannot touch its plan', async (t) => {
  const { server } = await billedServer(t)
  const orgId = server.plinth.installation.orgId
  await setUpOwner(server)
  // The dashboard's billing screen is a client of these operations (test/app/dashboard.test.ts drives it).
  const stranger = await addPerson(server, 'stranger@example.com')
  assert.equal(
    (await stranger.api('POST', '/v1/billing/checkout', { plan: 'base' }, { headers: { 'x-organization-id': orgId } })).status,
    404,
  )
  assert.equal((await stranger.api('POST', '/v1/billing/portal', {}, { headers: { 'x-organization-id': orgId } })).status, 404)
})

test('Stripe: a failure at the provider is a 502 that says what Stripe said; the plan is unchanged', async (t) => {
  const { stripe, server } = await billedServer(t)
  const owner = await setUpOwner(server)
  stripe.failNext = { status: 402, type: 'card_error', message: 'Your card was declined.' }
  const failed = await owner.api('POST', '/v1/billing/checkout', { plan: 'base' })
  assert.equal(failed.status, 502)
  assert.equal(failed.body.kind, 'upstream')
  assert.match(failed.body.message, /Stripe refused the request \(card_error\): Your card was declined/)
  assert.doesNotMatch(JSON.stringify(failed.body), new RegExp(SECRET))
  assert.equal((await owner.api('GET', '/v1/billing')).body.plan, 'free')
  // The portal before any checkout: nothing to manage yet.
  const portal = await owner.api('POST', '/v1/billing/portal')
  assert.equal(portal.status, 409)
  assert.match(portal.body.message, /start a checkout first/)
})
