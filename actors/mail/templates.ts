// Every message Plinth sends, written here: plain text and a simple HTML part from the same paragraphs, no user-supplied HTML.
import { escapeHtml } from '../../core/text.js'
import type { MailContent } from './outbox.js'

/** A paragraph: text, or a link (shown whole in the plain part, so a reader can copy it). */
type Part = string | { link: string; label: string }

export interface Composed extends MailContent {
  subject: string
}

/** Subject lines are one line: a name with a newline in it could otherwise add a header. */
function oneLine(text: string, max = 120): string {
  const line = text.replace(/[\r\n\t]+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The message from its paragraphs: the text part as written, the HTML part each paragraph escaped. */
export function compose(subject: string, parts: readonly Part[], footer: string, headers: Record<string, string> = {}): Composed {
  const text = [...parts.map((p) => (typeof p === 'string' ? p : `${p.label}:\n${p.link}`)), '--', footer].join('\n\n')
  const paragraphs = parts.map((p) =>
    typeof p === 'string'
      ? `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`
      : `<p><a href="${escapeHtml(p.link)}">${escapeHtml(p.label)}</a><br><span style="color:#555;font-size:13px">${escapeHtml(p.link)}</span></p>`,
  )
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#111;max-width:560px">${paragraphs.join('')}<hr style="border:none;border-top:1px solid #ddd"><p style="color:#555;font-size:13px">${escapeHtml(footer)}</p></body></html>`
  return { subject: oneLine(subject), text, html, headers }
}

/** Which server a message comes from, in its words: its dashboard's address. */
export interface Server {
  /** The dashboard's URL, e.g. https://plinth.example.com/app. */
  app: string
  /** Its host, as a person knows the server. */
  host: string
}

const footerOf = (server: Server) => `Sent by Plinth at ${server.host} (${server.app}).`

export function passwordReset(server: Server, account: string, link: string, minutes: number): Composed {
  return compose(
    `Reset your password on ${server.host}`,
    [
      `Someone asked to reset the password of the account ${account} on ${server.host}. If it was you, choose a new password within ${minutes} minutes:`,
      { link, label: 'Choose a new password' },
      'The link works once. If you did not ask, ignore this message: your password stays as it is, and nobody can use this link without access to your mailbox.',
    ],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}

/** `where`: "the workspace Acme", or "the website Blog (workspace Acme)". */
export function invitation(server: Server, inviter: string, where: string, role: string, link: string, days: number): Composed {
  return compose(
    `${inviter} invited you to ${where.replace(/^the (workspace|website) /, '')} on ${server.host}`,
    [
      `${inviter} invited you to join ${where} on ${server.host} as ${role === 'admin' ? 'an admin' : `a ${role}`}.`,
      { link, label: 'Accept the invitation' },
      `The link works for ${days} days. If you do not know ${inviter}, ignore this message.`,
    ],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}

export function emailChange(server: Server, name: string, address: string, link: string, hours: number): Composed {
  return compose(
    `Confirm your new email address on ${server.host}`,
    [
      `${name === '' ? 'Someone' : name} asked to use ${address} to sign in to ${server.host}. Confirm it within ${hours} hours:`,
      { link, label: 'Confirm this address' },
      'Until it is confirmed, the account keeps its old address. If you did not ask, ignore this message.',
    ],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}

export function emailChanged(server: Server, oldAddress: string, newAddress: string): Composed {
  return compose(
    `The sign-in address of your account on ${server.host} is changing`,
    [
      `Someone signed in to your account on ${server.host} asked to change its address from ${oldAddress} to ${newAddress}. It changes once the link sent to ${newAddress} is opened.`,
      `If it was not you, sign in at ${server.app} with your password and change it: that ends every other session. The link sent to the new address cannot be confirmed from here.`,
    ],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}

/**
 * A link someone shared (`email_link`): their plain-text message as they wrote it, the link, and for a
 * protected link the password when they chose to send it (else whom to ask). Replies go to them.
 */
export function sharedLink(
  server: Server,
  sender: string,
  what: string,
  link: string,
  message: string,
  lock: { password: string | null } | null,
  replyTo: string | null,
): Composed {
  return compose(
    `${sender} shared ${what} with you`,
    [
      `${sender} shared ${what} with you, from ${server.host}.`,
      ...(message.trim() === '' ? [] : [message.trim()]),
      { link, label: 'Open it' },
      ...(lock === null
        ? []
        : [lock.password === null ? `It asks for a password: ask ${sender} for it.` : `It asks for a password: ${lock.password}`]),
    ],
    `${footerOf(server)} Sent because ${sender} entered your address; nothing else will be sent unless they share again.`,
    replyTo === null ? {} : { 'Reply-To': replyTo },
  )
}

export function testMessage(server: Server): Composed {
  return compose(
    `A test message from Plinth at ${server.host}`,
    [`This message was sent by plinth mail test on ${server.host}: outgoing mail works.`],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}

/** A form's submission for its notification: its fields (files as links), Reply-To from an `email` field. */
export function formSubmission(
  server: Server,
  site: string,
  form: string,
  fields: readonly { name: string; value: string }[],
  files: readonly { field: string; filename: string; link: string }[],
  manage: string,
  unsubscribe: string,
  replyTo: string | null,
): Composed {
  const lines = fields.map((f) => `${f.name}: ${f.value}`).join('\n')
  return compose(
    `New submission to ${form} on ${site}`,
    [
      `A visitor sent the form ${form} on ${site}:`,
      lines === '' ? '(no fields)' : lines,
      ...files.map((f) => ({ link: f.link, label: `${f.field}: ${f.filename}` })),
      { link: manage, label: 'See every submission' },
    ],
    `${footerOf(server)} You get these because your address is on this form's notifications; stop them: ${unsubscribe}`,
    {
      'Auto-Submitted': 'auto-generated',
      'List-Unsubscribe': `<${unsubscribe}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      ...(replyTo === null ? {} : { 'Reply-To': replyTo }),
    },
  )
}

/** More submissions than a mail each a minute: one message saying how many, and where to read them. */
export function formDigest(server: Server, site: string, form: string, count: number, manage: string, unsubscribe: string): Composed {
  return compose(
    `${count} new submissions to ${form} on ${site}`,
    [
      `${count} more visitors sent the form ${form} on ${site} within a minute: too many for a message each, so here they are together.`,
      { link: manage, label: 'Read them' },
    ],
    `${footerOf(server)} You get these because your address is on this form's notifications; stop them: ${unsubscribe}`,
    {
      'Auto-Submitted': 'auto-generated',
      'List-Unsubscribe': `<${unsubscribe}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
  )
}

/** An address that is not a member's, added to a form's notifications: it receives nothing until it confirms. */
export function notifyConfirm(server: Server, by: string, site: string, form: string, link: string, days: number): Composed {
  return compose(
    `Confirm: submissions of ${form} on ${site} to this address`,
    [
      `${by} asked to send the submissions of the form ${form} on ${site} (${server.host}) to this address. Nothing is sent until you confirm, within ${days} days:`,
      { link, label: 'Send them to me' },
      'If you did not expect this, ignore this message: this address gets nothing more.',
    ],
    footerOf(server),
    { 'Auto-Submitted': 'auto-generated' },
  )
}
