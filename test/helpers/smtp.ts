// A real SMTP server on loopback for the tests (smtp-server, by nodemailer's authors): AUTH, STARTTLS with
// a CA of the test's own, and every message parsed with mailparser as a mail client would read it.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server'
import { freePort } from './http.js'
import { tempDir } from './server.js'
import { waitUntil } from './wait.js'

export const SMTP_USER = 'plinth'
export const SMTP_PASSWORD = 'relay-password-1'

/**
 * How the server answers the next messages: accept, a temporary refusal (4xx), a permanent one (5xx), or
 * never (`hang`: the message is read and no answer comes, as a relay that stalls mid-transaction).
 */
export type SmtpAnswer = { code: 250 } | { code: 451 | 550; message: string } | { code: 'hang' }

export interface TestSmtp {
  port: number
  /** The CA file the server's certificate chains to (PLINTH_SMTP_CA_FILE). */
  caFile: string
  /** PLINTH_SMTP_URL for this server. */
  url: string
  /** Every message accepted, parsed, in order. */
  received: ParsedMail[]
  /** The same messages as they came over the wire (a DKIM check reads these bytes). */
  raw: Buffer[]
  /** How many messages were offered (accepted or refused). */
  offered: number
  /** The answers to the next messages, in turn (then 250). */
  answers: SmtpAnswer[]
  /** Waits for the n-th accepted message (1-based) and returns it. */
  message(n: number): Promise<ParsedMail>
  /** Stops listening (connections are then refused) until `start`. */
  stop(): Promise<void>
  start(): Promise<void>
}

/** A CA and a certificate for localhost and 127.0.0.1 it signs (openssl, as deploy/cluster/make-certs.sh does). */
function certificates(dir: string): { ca: string; key: string; cert: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Plinth test CA')
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  )
  return {
    ca: join(dir, 'ca.pem'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
  }
}

/** Starts the SMTP server for the test (stopped when it ends): STARTTLS and AUTH PLAIN/LOGIN required. */
export async function startSmtp(t: TestContext): Promise<TestSmtp> {
  const dir = tempDir(t, 'plinth-smtp-')
  const { ca, key, cert } = certificates(dir)
  const port = await freePort()
  let server: SMTPServer | null = null
  const smtp: TestSmtp = {
    port,
    caFile: ca,
    url: `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${port}`,
    received: [],
    raw: [],
    offered: 0,
    answers: [],
    message: (n) => waitUntil(() => smtp.received[n - 1], `message ${n} to reach the SMTP server`, 30_000, 50),
    async stop() {
      const s = server
      server = null
      if (s !== null) await new Promise<void>((resolve) => s.close(() => resolve()))
    },
    async start() {
      const s = new SMTPServer({
        secure: false,
        key,
        cert,
        // STARTTLS before AUTH: a client that will not encrypt is refused its login.
        allowInsecureAuth: false,
        authMethods: ['PLAIN', 'LOGIN'],
        logger: false,
        onAuth(auth, _session, callback) {
          if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) return callback(null, { user: SMTP_USER })
          callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }))
        },
        onData(stream: SMTPServerDataStream, _session, callback) {
          const chunks: Buffer[] = []
          stream.on('data', (chunk: Buffer) => chunks.push(chunk))
          stream.on('end', () => {
            smtp.offered++
            const answer = smtp.answers.shift() ?? { code: 250 }
            if (answer.code === 'hang') return
            if (answer.code !== 250) return callback(Object.assign(new Error(answer.message), { responseCode: answer.code }))
            const bytes = Buffer.concat(chunks)
            simpleParser(bytes).then(
              (parsed) => {
                smtp.raw.push(bytes)
                smtp.received.push(parsed)
                callback(null, 'Message queued as test')
              },
              (error: Error) => callback(error),
            )
          })
        },
      })
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject)
        s.listen(port, '127.0.0.1', () => resolve())
      })
      server = s
    },
  }
  await smtp.start()
  t.after(() => smtp.stop())
  return smtp
}

/** The environment that points a server at this SMTP server. */
export function smtpEnv(smtp: TestSmtp): Record<string, string> {
  return { PLINTH_SMTP_URL: smtp.url, PLINTH_SMTP_CA_FILE: smtp.caFile, PLINTH_MAIL_FROM: 'Plinth <no-reply@plinth.test>' }
}

/** The first link in a message's text that goes to `path` of the dashboard. */
export function linkIn(message: ParsedMail, path: string): string {
  const link = (message.text ?? '').split(/\s+/).find((word) => word.includes(`/app${path}`))
  if (link === undefined) throw new Error(`no ${path} link in the message:\n${message.text}`)
  return link
}
