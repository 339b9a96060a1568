// The relay: nodemailer's SMTP transport on the operator's PLINTH_SMTP_URL, its answers sorted into sent, retry and refused.
import { readFileSync } from 'node:fs'
import type { Transporter } from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js'
import type { DkimConfig, SmtpConfig } from '../../core/config-mail.js'

export interface OutgoingMessage {
  to: string
  subject: string
  /** Without angle brackets. */
  messageId: string
  text: string
  html: string
  headers: Record<string, string>
}

/** What the relay said: `answer` is its reply line (or what went wrong before one came). */
export interface RelayAnswer {
  ok: boolean
  /** A refusal that will not change (a 5xx reply to the message): the message is failed, not retried. */
  permanent: boolean
  code: number | null
  answer: string
}

export interface MailTransport {
  send(message: OutgoingMessage): Promise<RelayAnswer>
  close(): void
}

/** Each message on a connection of its own, within these times (a relay that hangs is a temporary failure). */
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/**
 * The operator's relay (an SMTP server: Postfix on the machine, or a provider's). It is the operator's
 * own address, so these connections do not go through the SSRF guard that requests made for users pass.
 * The password never leaves nodemailer: an error is reported by its reply, never with the URL.
 */
export function smtpTransport(smtp: SmtpConfig, dkim: DkimConfig | null, from: () => string): MailTransport {
  // nodemailer loads at the first message, not at every start (like Stripe's client and sharp). Read
  // through `default`: a CommonJS library loaded with import() has only that in the bundle.
  let transporter: Promise<Transporter<SMTPTransport.SentMessageInfo>> | null = null
  const open = async (): Promise<Transporter<SMTPTransport.SentMessageInfo>> => {
    const { default: nodemailer } = await import('nodemailer')
    const credentials = smtp.credentials()
    return nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.implicitTls,
      requireTLS: !smtp.implicitTls && smtp.starttls === 'required',
      ignoreTLS: !smtp.implicitTls && smtp.starttls === 'off',
      ...(credentials === null ? {} : { auth: { user: credentials.user, pass: credentials.pass } }),
      ...(smtp.caFile === null ? {} : { tls: { ca: readFileSync(smtp.caFile) } }),
      ...(dkim === null ? {} : { dkim: { domainName: dkim.domainName, keySelector: dkim.keySelector, privateKey: dkim.privateKey() } }),
      ...TIMEOUTS,
      // nodemailer's own logging off: it would print the conversation, AUTH included.
      logger: false,
      debug: false,
    })
  }
  return {
    async send(message) {
      try {
        const info = await (
          await (transporter ??= open())
        ).sendMail({
          from: from(),
          to: message.to,
          subject: message.subject,
          text: message.text,
          html: message.html,
          headers: message.headers,
          messageId: `<${message.messageId}>`,
        })
        return { ok: true, permanent: false, code: replyCode(info.response), answer: info.response }
      } catch (error) {
        const e = error as { responseCode?: number; response?: string; code?: string; message?: string }
        const code = typeof e.responseCode === 'number' ? e.responseCode : null
        // A refused login is the server's configuration, not the message's: retried while the operator fixes it.
        const permanent = code !== null && code >= 500 && e.code !== 'EAUTH'
        const answer = e.response ?? `${e.code ?? 'error'}: ${e.message ?? String(error)}`
        return { ok: false, permanent, code, answer: answer.slice(0, 500) }
      }
    },
    close() {
      void transporter?.then((t) => t.close())
    },
  }
}

function replyCode(response: string): number | null {
  const code = /^(\d{3})\b/.exec(response)?.[1]
  return code === undefined ? null : Number(code)
}
