import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

/** One request the stand-in received: method, path, the form body Stripe's client sends, and the key. */
export interface StripeCall {
  method: string
  path: string
  query: URLSearchParams
  form: URLSearchParams
  authorization: string
}

interface Subscription {
  id: string
  customer: string
  status: string
  price: string
}

/**
 * A small stand-in for the few Stripe endpoints Plinth uses (customers, Checkout Sessions, portal
 * sessions, subscriptions), on a loopback port, answering the shapes of Stripe's API. The official
 * `stripe` client talks to it over HTTP as it would to api.stripe.com; nothing of the client is mocked.
 * `complete(sessionId)` plays the person paying: the session's price becomes an active subscription.
 */
export class StripeStandIn {
  readonly calls: StripeCall[] = []
  readonly subscriptions: Subscription[] = []
  /** Answer the next request with this Stripe error (status and body), once. */
  failNext: { status: number; type: string; message: string } | null = null
  #sessions = new Map<string, { customer: string; price: string }>()
  #next = 0
  origin = ''

  constructor(private readonly secretKey: string) {}

  async start(t: TestContext): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => this.#answer(req, res, Buffer.concat(chunks).toString('utf8')))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    this.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())))
    return this
  }

  /** The person paid the checkout session: its price becomes an active subscription of its customer. */
  complete(sessionId: string): Subscription {
    const session = this.#sessions.get(sessionId)
    if (session === undefined) throw new Error(`no checkout session ${sessionId}`)
    const subscription = { id: this.#id('sub'), customer: session.customer, status: 'active', price: session.price }
    this.subscriptions.push(subscription)
    return subscription
  }

  #id(prefix: string): string {
    return `${prefix}_standin${++this.#next}`
  }

  #answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', this.origin)
    const call: StripeCall = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      form: new URLSearchParams(body),
      authorization: req.headers.authorization ?? '',
    }
    this.calls.push(call)
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${this.#next}` })
      res.end(JSON.stringify(value))
    }
    const error = (status: number, type: string, message: string) => send(status, { error: { type, message } })
    if (call.authorization !== `Bearer ${this.secretKey}`) return error(401, 'invalid_request_error', 'Invalid API Key provided')
    if (this.failNext !== null) {
      const failure = this.failNext
      this.failNext = null
      return error(failure.status, failure.type, failure.message)
    }
    const route = `${call.method} ${call.path}`
    if (route === 'POST /v1/customers') {
      return send(200, {
        id: this.#id('cus'),
        object: 'customer',
        email: call.form.get('email'),
        name: call.form.get('name'),
        metadata: { orgId: call.form.get('metadata[orgId]') },
      })
    }
    if (route === 'POST /v1/checkout/sessions') {
      const customer = call.form.get('customer')
      const price = call.form.get('line_items[0][price]')
      if (customer === null || price === null)
        return error(400, 'invalid_request_error', 'Missing required param: customer or line_items[0][price].')
      const id = this.#id('cs')
      this.#sessions.set(id, { customer, price })
      return send(200, {
        id,
        object: 'checkout.session',
        mode: call.form.get('mode'),
        customer,
        url: `https://checkout.stripe.test/c/pay/${id}`,
        success_url: call.form.get('success_url'),
        cancel_url: call.form.get('cancel_url'),
      })
    }
    if (route === 'POST /v1/billing_portal/sessions') {
      const id = this.#id('bps')
      return send(200, {
        id,
        object: 'billing_portal.session',
        customer: call.form.get('customer'),
        return_url: call.form.get('return_url'),
        url: `https://billing.stripe.test/p/session/${id}`,
      })
    }
    if (route === 'GET /v1/subscriptions') {
      const customer = call.query.get('customer')
      const status = call.query.get('status') ?? 'active'
      const data = this.subscriptions
        .filter((s) => s.customer === customer && (status === 'all' || s.status === status))
        .map((s) => ({
          id: s.id,
          object: 'subscription',
          customer: s.customer,
          status: s.status,
          items: {
            object: 'list',
            data: [{ id: `si_${s.id}`, object: 'subscription_item', price: { id: s.price, object: 'price' } }],
            has_more: false,
          },
        }))
      return send(200, { object: 'list', url: '/v1/subscriptions', has_more: false, data })
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${call.method}: ${call.path}).`)
  }
}
