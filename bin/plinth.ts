#!/usr/bin/env -S node --no-node-snapshot
import { parseArgs } from 'node:util'
import type { OperatorCommand } from '../actors/operator.js'
import { ConfigError, loadConfig, type Config } from '../core/config.js'
import { errorBody } from '../core/errors.js'
import { PublicUrls } from '../core/hostnames.js'
import { stderrLogger } from '../core/log.js'
import { existsSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { BackupError } from '../core/backup/errors.js'
import { SecretFileError } from '../core/installation-secret.js'
import { UpgradeNeededError } from '../core/store/write-set.js'

const USAGE = `usage:
  plinth start                                      run the server (configuration from the environment)
  plinth suspend <websiteId> --reason "<text>"      take a site down: nothing serves, publishing fails
  plinth unsuspend <websiteId>                      lift a takedown
  plinth user add --email <email> [--name "<name>"]  a person with a personal workspace (password from stdin)
  plinth user reset-password --email <email>        a new password (from stdin); signs their sessions out
  plinth user reset-password --user <usr_…> --email <email>
                                                    the same for a person without an email yet (sets it)
  plinth plan set <orgId> free|base|max [--comped]  set an organization's plan (billing)
  plinth feedback                                   list what people and agents sent with POST /v1/feedback
  plinth mail list [--state held|queued|retrying|sent|failed] [--limit N]
                                                    the mail outbox, newest first, with each message's state and the
                                                    relay's last answer
  plinth mail show <msg_…>                          one message: its attempts and, until it is sent, what it says (the
                                                    link of a reset or invitation held when no relay is configured)
  plinth mail retry <msg_…>                         send a retrying (or held, once a relay is configured) message now
  plinth mail test --to <address>                   send a test message and print the relay's answer
  plinth anonymous-invite [--uses N] [--days D] [--note "<text>"]
                                                    an invite code for anonymous publishing (PLINTH_ANONYMOUS=invite_only)
  plinth backup <root> [--keep N]                   a consistent backup of PLINTH_DATA_DIR into <root>/<time>/ (a running
                                                    server goes on serving; only blobs <root> lacks are copied); --keep N
                                                    then keeps the newest N backups
  plinth cluster init                               make the stopped embedded installation of PLINTH_DATA_DIR a new
                                                    cluster's first node (the node's settings in the environment): its
                                                    records and files seed the cluster's empty log
  plinth nats-key <file>                            a NATS user key for a cluster's nodes: its seed written to <file> (0600,
                                                    PLINTH_CLUSTER_NATS_CREDS), its public key printed (for nats-server.conf)
  plinth backup verify <backup|root> [--secret FILE]
                                                    check the manifest's signature, every file against the manifest, and
                                                    walk the database copy
  plinth restore <backup|root> [--force] [--secret FILE] [--trust-unsigned]
                                                    restore into PLINTH_DATA_DIR (empty, or --force to replace it); the
                                                    backup must be signed by the installation's secret: PLINTH_SECRET_FILE,
                                                    --secret FILE, or the data directory's own (backups never hold it)
  plinth restore <root> --at TIME | --position N [--force] [--secret FILE]
                                                    a point in time from a root with an archive (PLINTH_BACKUP_ARCHIVE):
                                                    the newest base before it, then the archive replayed up to it (TIME:
                                                    ISO 8601, e.g. 2026-11-29T10:15:00Z)
`

/** The configuration from the environment: the server's (`start`), or an operator command's, which needs no node identity. */
function config(asOperator = true): Config {
  try {
    return loadConfig(process.env, { asOperator })
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`plinth: configuration error: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
}

/**
 * `plinth start`: run the server on the environment's configuration.
 * SIGTERM and SIGINT drain in-flight requests and close the database before exiting.
 */
async function start(): Promise<void> {
  const cfg = config(false)
  // The server's whole tree is loaded only to run it: the backup commands start in a fraction of the time.
  const { startPlinth } = await import('../plinth/start.js')
  // A cluster's node whose data directory fell off the log stops (exit 75: a supervisor starts it again, and it restores a
  // backup); one that met a newer Plinth's log entry exits 78 (started again as it is, it would stop again: upgrade it).
  let exitCode = 0
  const plinth = await startPlinth({
    config: cfg,
    log: stderrLogger,
    onLost: (_reason, upgrade) => ((exitCode = upgrade ? UPGRADE_NEEDED : 75), stop('the cluster')),
  })
  // Before the banner: a supervisor (or a test) may stop the server as soon as it says it listens.
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    stderrLogger.info(`${signal}: draining requests and closing the database`)
    const started = Date.now()
    exitBy(SHUTDOWN_DEADLINE_MS, 'shutdown')
    plinth.close().then(
      () => {
        // The operator's log says the stop finished (and how long it took), not only that it began.
        stderrLogger.info('stopped: every request answered and the database closed', { ms: Date.now() - started })
        process.exit(exitCode)
      },
      (error: unknown) => {
        stderrLogger.error('shutdown failed', { error: String(error) })
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
  const { installation, urls } = plinth
  if (installation.created) {
    process.stdout.write(`Created organization ${installation.orgId} with an admin API key of organization scope.\n`)
    if (installation.generatedSecret !== null) {
      process.stdout.write(`Admin API key (shown once, store it now): ${installation.generatedSecret}\n`)
    } else {
      process.stdout.write('Admin API key: the secret given in PLINTH_ADMIN_KEY.\n')
    }
  }
  if (installation.setupCode !== null) {
    // The secret rides in the fragment: browsers never send it to a server or put it in logs.
    process.stdout.write(`Owner setup link (shown once, valid 24 hours): ${urls.app('/setup')}#token=${installation.setupCode}\n`)
  }
  // A cluster's node says which it is: the primary, or a replica and whom it follows, and how far it applied the log.
  const node = plinth.cluster
  const role =
    node === null
      ? ''
      : `  cluster node ${node.node}: ${node.primary ? 'the primary, taking writes' : `a replica following ${node.leader ?? 'nobody yet (an election is under way)'}, serving sites and handing the rest to the primary`}; at entry ${node.applied} of the log\n`
  process.stdout.write(
    `Plinth listening on ${cfg.host}:${plinth.port} (${plinth.listening} of ${cfg.serveThreads} ${cfg.serveThreads === 1 ? 'thread' : 'threads'} listening, PLINTH_SERVE_THREADS)\n${role}  API     ${urls.apiOrigin}/v1  (OpenAPI ${urls.api('/openapi.json')}, MCP ${urls.api('/v1/mcp')})\n  sites   ${urls.published('{sub}')} and ${urls.draft('{sub}')}\n  people  ${urls.appUrl} (the dashboard), ${urls.api('/docs')} (the guide)\n`,
  )
  // An uncaught exception leaves the process in an unknown state: end it promptly so a supervisor
  // restarts it. Node's own exit would wait on LMDB's write thread, which waits on this thread for a
  // transaction callback: a process that listens and answers nothing. So the database is closed
  // first, with a hard deadline behind it.
  process.on('uncaughtException', (error) => {
    stderrLogger.error('uncaught exception: Plinth stops now (run it under a supervisor that restarts it)', {
      error: error?.stack ?? String(error),
    })
    if (stopping) return
    stopping = true
    exitBy(FATAL_EXIT_DEADLINE_MS, 'exit after an uncaught exception')
    plinth.halt().then(
      () => process.exit(1),
      () => process.exit(1),
    )
  })
}

/** The exit of a cluster's node that met a log entry of a newer Plinth (EX_CONFIG; plinth.service's RestartPreventExitStatus). */
const UPGRADE_NEEDED = 78

/** How long a SIGTERM shutdown may take (requests drain for up to 10 s, then builds stop). */
const SHUTDOWN_DEADLINE_MS = 30_000
/** How long the exit after an uncaught exception may take. */
const FATAL_EXIT_DEADLINE_MS = 3_000

/**
 * A backstop for a shutdown that does not finish: the process kills itself. SIGKILL is safe for the
 * data (every commit is durable or absent) and the pid file of a dead process is taken over.
 */
function exitBy(deadlineMs: number, what: string): void {
  setTimeout(() => {
    stderrLogger.error(`${what} did not finish within ${deadlineMs / 1000} s; killing the process`)
    process.kill(process.pid, 'SIGKILL')
  }, deadlineMs)
}

/** Runs an operator command on the running server, or on the data directory when none runs. */
async function operator(command: OperatorCommand): Promise<void> {
  const cfg = config()
  const { sendControlCommand } = await import('../plinth/control.js')
  const reply = await sendControlCommand(cfg.dataDir, command)
  let answer: { message: string }
  if (reply !== null) {
    if (!reply.ok) throw new Error(reply.error?.message ?? 'failed')
    answer = reply.answer!
  } else {
    const [{ openServices }, { runOperatorCommand }] = await Promise.all([import('../plinth/services.js'), import('../actors/operator.js')])
    const services = await openServices(
      { config: cfg, log: stderrLogger, offline: true },
      () => new PublicUrls(cfg.apiOrigin ?? 'http://localhost', cfg.siteDomain, cfg.appUrl),
    )
    try {
      answer = await runOperatorCommand(services.registry, command).catch((error: unknown) => {
        throw new Error(errorBody(error).message)
      })
    } finally {
      await services.close()
    }
  }
  process.stdout.write(`${answer.message}\n`)
}

/** `plinth cluster init`: the stopped embedded installation of PLINTH_DATA_DIR seeds a new cluster's log (plinth/cluster-init.ts). */
async function clusterInit(): Promise<void> {
  const cfg = config(false)
  const { initCluster, ClusterInitError } = await import('../plinth/cluster-init.js')
  const seeded = await initCluster(cfg, stderrLogger).catch((error: unknown) => {
    throw error instanceof ClusterInitError ? new UsageError(error.message, false) : error
  })
  process.stdout.write(
    `Seeded the cluster's log from ${cfg.dataDir}: ${seeded.records} records (${Math.round(seeded.bytes / 1024)} KiB) in ${seeded.entries} entries, ${seeded.files} blob files; this data directory is node ${cfg.cluster!.node}'s, at entry ${seeded.position}.\nStart this node (plinth start, the same settings): it leads. Start the others on empty data directories: each replays the log (or, with PLINTH_CLUSTER_BACKUPS, restores a backup taken from this node first).\n`,
  )
}

/** `plinth nats-key <file>`: an nkey for the nodes' NATS user; the seed never leaves the file. */
async function natsKey(file: string): Promise<void> {
  const path = resolve(file)
  if (existsSync(path)) throw new UsageError(`${path} exists already; choose a new file (an nkey seed is never written over)`)
  const { newUserKey } = await import('../plinth/nats-key.js')
  const user = newUserKey()
  writeFileSync(path, `${user.seed}\n`, { mode: 0o600, flag: 'wx' })
  process.stdout.write(
    `Wrote the seed of a NATS user key to ${path} (give it to every node: PLINTH_CLUSTER_NATS_CREDS=${path}). Its public key, for the nats-servers' configuration (deploy/cluster/nats-server.conf, PLINTH_NATS_USER):\n${user.publicKey}\n`,
  )
}

/** A password from standard input (piped, or typed and ended with Ctrl-D): never an argument, which `ps` would show. */
async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password (then Enter and Ctrl-D): ')
  let text = ''
  for await (const chunk of process.stdin) text += String(chunk)
  const password = text.replace(/\r?\n$/, '')
  if (password === '')
    throw new UsageError('the password is read from standard input, e.g. printf %s "$PASSWORD" | plinth user add --email …')
  return password
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      reason: { type: 'string' },
      help: { type: 'boolean' },
      email: { type: 'string' },
      name: { type: 'string' },
      user: { type: 'string' },
      comped: { type: 'boolean' },
      uses: { type: 'string' },
      days: { type: 'string' },
      note: { type: 'string' },
      keep: { type: 'string' },
      force: { type: 'boolean' },
      secret: { type: 'string' },
      'trust-unsigned': { type: 'boolean' },
      at: { type: 'string' },
      position: { type: 'string' },
      state: { type: 'string' },
      limit: { type: 'string' },
      to: { type: 'string' },
    },
  })
  const [command = 'start', websiteId] = positionals
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  if (command === 'start') return start()
  if ((command === 'suspend' || command === 'unsuspend') && websiteId !== undefined) {
    if (command === 'suspend' && (values.reason === undefined || values.reason.trim() === ''))
      throw new UsageError('suspend needs --reason "<text>"')
    return operator(command === 'suspend' ? { command, websiteId, reason: values.reason! } : { command, websiteId })
  }
  if (command === 'plan' && websiteId === 'set' && positionals.length === 4) {
    return operator({ command: 'plan-set', orgId: positionals[2], plan: positionals[3], comped: values.comped === true })
  }
  if (command === 'feedback') return operator({ command: 'feedback' })
  if (command === 'mail') {
    const id = positionals[2]
    if (websiteId === 'list') {
      if (values.limit !== undefined && (!/^\d{1,4}$/.test(values.limit) || Number(values.limit) < 1))
        throw new UsageError('--limit must be a whole number of messages from 1')
      return operator({ command: 'mail-list', state: values.state ?? null, limit: values.limit === undefined ? 50 : Number(values.limit) })
    }
    if ((websiteId === 'show' || websiteId === 'retry') && id !== undefined && positionals.length === 3)
      return operator({ command: websiteId === 'show' ? 'mail-show' : 'mail-retry', id })
    if (websiteId === 'test') {
      if (values.to === undefined) throw new UsageError('mail test needs --to ADDRESS')
      return operator({ command: 'mail-test', to: values.to })
    }
    throw new UsageError('mail takes list [--state S] [--limit N], show ID, retry ID or test --to ADDRESS')
  }
  if (command === 'anonymous-invite') {
    const count = (text: string | undefined, flag: string): number | null => {
      if (text === undefined) return null
      if (!/^\d{1,6}$/.test(text) || Number(text) < 1) throw new UsageError(`--${flag} must be a whole number from 1`)
      return Number(text)
    }
    return operator({
      command: 'anonymous-invite',
      uses: count(values.uses, 'uses'),
      days: count(values.days, 'days'),
      note: values.note ?? null,
    })
  }
  if (command === 'backup' && websiteId === 'verify') {
    if (positionals.length !== 3) throw new UsageError('backup verify needs the backup (or backup root) to check')
    const { verify } = await import('./backup-commands.js')
    return verify(config(), positionals[2]!, values.secret)
  }
  if (command === 'backup') {
    if (positionals.length !== 2) throw new UsageError('backup needs the backup root: plinth backup /var/backups/plinth')
    if (values.keep !== undefined && (!/^\d{1,4}$/.test(values.keep) || Number(values.keep) < 1))
      throw new UsageError('--keep must be a whole number of backups from 1')
    const { backup } = await import('./backup-commands.js')
    return backup(config(), positionals[1]!, values.keep === undefined ? undefined : Number(values.keep))
  }
  if (command === 'restore') {
    if (positionals.length !== 2) throw new UsageError('restore needs the backup (or backup root) to restore')
    const { restore } = await import('./backup-commands.js')
    return restore(config(), positionals[1]!, {
      force: values.force === true,
      secret: values.secret,
      trustUnsigned: values['trust-unsigned'] === true,
      at: values.at,
      position: values.position,
    })
  }
  if (command === 'cluster' && websiteId === 'init' && positionals.length === 2) return clusterInit()
  if (command === 'nats-key') {
    if (positionals.length !== 2) throw new UsageError('nats-key needs the file to write the seed to: plinth nats-key /etc/plinth/nats.nk')
    return natsKey(positionals[1]!)
  }
  if (command === 'user' && websiteId === 'add') {
    if (values.email === undefined) throw new UsageError('user add needs --email <email>')
    return operator({ command: 'user-add', email: values.email, name: values.name ?? '', password: await passwordFromStdin() })
  }
  if (command === 'user' && websiteId === 'reset-password') {
    if (values.email === undefined && values.user === undefined)
      throw new UsageError('user reset-password needs --email <email> (or --user <usr_…>)')
    return operator({ command: 'user-reset-password', email: values.email, userId: values.user, password: await passwordFromStdin() })
  }
  throw new UsageError(`unknown command: ${argv.join(' ')}`)
}

/** A command refused as asked (exit 2); `usage`: the usage text follows the message. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly usage = true,
  ) {
    super(message)
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`plinth: ${(error as Error).message}\n`)
  if (error instanceof UsageError && error.usage) process.stderr.write(USAGE)
  // A refusal (usage, a backup that cannot be taken or restored as asked, a setting the cluster does not take) changed nothing: exit 2.
  process.exit(
    error instanceof UpgradeNeededError
      ? UPGRADE_NEEDED
      : error instanceof UsageError || error instanceof BackupError || error instanceof SecretFileError || error instanceof ConfigError
        ? 2
        : 1,
  )
})
