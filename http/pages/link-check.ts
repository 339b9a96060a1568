// What an invitation or setup link holds, said when its page is opened (not after the form is filled).
import { SIGN_IN_RATE_LIMIT } from '../../core/limits.js'
import type { PageDeps, PageRequest } from './page.js'

const when = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`

/**
 * POST {app}/link-check (form: `kind` invite or setup, `code`): `{ok, message}` as JSON. The code
 * travels in the link's fragment and is posted here, never put in a URL; tries are limited per address
 * as sign-ins are.
 */
export function checkLink(deps: PageDeps, r: PageRequest): void {
  const { exchange, form } = r
  const json = (status: number, body: { ok: boolean; message: string }, headers: Record<string, string> = {}) =>
    exchange.send(
      status,
      { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
      JSON.stringify(body),
    )
  const allowed = deps.limiter.take(`link-check:ip:${deps.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
  if (!allowed.allowed)
    return json(
      429,
      { ok: false, message: `Too many tries; wait ${allowed.retryAfterSeconds} seconds and reload.` },
      { 'retry-after': String(allowed.retryAfterSeconds) },
    )
  const code = form.get('code') ?? ''
  if (form.get('kind') === 'reset') {
    const link = deps.registry.resets.check(code)
    return json(
      200,
      link.valid
        ? { ok: true, message: `Choose the new password of your account. This link works once, until ${when(link.expiresAt!)}.` }
        : {
            ok: false,
            message:
              'This reset link was already used or has expired (a link works for 30 minutes). Ask for a new one: Forgot your password? on the sign-in page.',
          },
    )
  }
  if (form.get('kind') === 'email') {
    const link = deps.registry.account.emailLink(code)
    return json(
      200,
      link.valid
        ? { ok: true, message: `Confirm that you sign in with ${link.email} from now on.` }
        : {
            ok: false,
            message:
              'This confirmation link was already used, replaced by a newer one, or has expired (a link works for 24 hours). Ask again on the account page of the dashboard.',
          },
    )
  }
  if (form.get('kind') === 'notify') {
    const link = deps.registry.forms.notifications.confirmation(code)
    const site = link === null ? undefined : deps.registry.website(link.websiteId)?.record.name
    return json(
      200,
      link !== null
        ? { ok: true, message: `Send the submissions of the form ${link.form} on ${site ?? 'a site'} to ${link.email}.` }
        : {
            ok: false,
            message:
              'This link was already used, or has expired (a link works for 7 days). Ask whoever runs the site to add your address again.',
          },
    )
  }
  if (form.get('kind') === 'setup') {
    const link = deps.registry.people.setupLink(code)
    return json(
      200,
      link.valid
        ? { ok: true, message: `This link sets up the owner's account. It works once, until ${when(link.expiresAt!)}.` }
        : {
            ok: false,
            message:
              'This setup link was already used or has expired. If you set up the account already, sign in; otherwise ask the operator for a new link (plinth user reset-password).',
          },
    )
  }
  const { state, record } = deps.registry.teams.invitationLink(code)
  if (record === undefined || state === 'unknown')
    return json(200, {
      ok: false,
      message: 'This invitation link was already used, or it is not a valid link. Ask whoever invited you for a new one.',
    })
  const inviter = record.invitedBy.name ?? 'Someone'
  if (state !== 'pending')
    return json(200, {
      ok: false,
      message:
        state === 'expired'
          ? `This invitation expired on ${when(record.expiresAt)}. Ask ${inviter} for a new one.`
          : `This invitation was withdrawn. Ask ${inviter} if you should have a new one.`,
    })
  const workspace = deps.registry.organization(record.orgId)?.record.name ?? 'a workspace'
  const website = record.websiteId === null ? undefined : deps.registry.website(record.websiteId)?.record.name
  const role = record.role.replace(/_/g, ' ')
  const where = website === undefined ? `the workspace ${workspace}` : `the website ${website} (workspace ${workspace})`
  return json(200, {
    ok: true,
    message: `${inviter} invited ${record.email} to ${where} as ${role}. The invitation is open until ${when(record.expiresAt)}.`,
  })
}

/**
 * The page script of a link with a code in its fragment: fills the code in, takes it out of the
 * address bar, asks what the link holds and says it (hiding the form when the link cannot work); again
 * when another link is opened in the same tab.
 */
export function linkScript(appPath: string, field: string, kind: 'invite' | 'setup' | 'reset' | 'email' | 'notify'): string {
  return `(()=>{const form=document.getElementById('link-form'),note=document.getElementById('link-state');
async function run(){const v=new URLSearchParams(location.hash.slice(1)).get(${JSON.stringify(field)});if(!v)return;
document.querySelectorAll('input[name=${field}]').forEach(i=>i.value=v);history.replaceState(null,'',location.pathname);
try{const r=await fetch(${JSON.stringify(`${appPath}/link-check`)},{method:'POST',headers:{'content-type':'application/x-www-form-urlencoded'},body:new URLSearchParams({kind:${JSON.stringify(kind)},code:v})});
const a=await r.json();note.textContent=a.message;note.className=a.ok?'notice':'error';form.hidden=!a.ok}catch(e){}}
run();addEventListener('hashchange',run)})()`
}
