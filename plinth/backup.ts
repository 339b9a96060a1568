// Backups wired to a data directory: the running server's side, and the two sources `plinth backup` reads from.
import { createConnection } from 'node:net'
import type { RootDatabase } from 'lmdb'
import type { Store } from '../core/store/store.js'
import type { BackupSource } from '../core/backup/take.js'
import { crashPoint } from '../core/crash.js'
import { controlSocketPath } from './control-path.js'
import type { BackupHost } from './control.js'

/**
 * The running server's side: while a backup runs, no blob file is removed (releases wait), and the
 * database is copied by LMDB's compacting copy, which reads one transaction on a thread of its own
 * while the server goes on serving and writing.
 */
export function backupHost(store: Store, ended: () => void = () => undefined): BackupHost {
  return {
    async begin(dbDir) {
      const paused = store.blobs.pauseReleases()
      // `ended`: a cluster's node tells the others (its primary may trim the log to the backups).
      const resume = () => paused().finally(ended)
      try {
        await store.env.backup(dbDir, true)
        crashPoint('backup:database-copied')
        return resume
      } catch (error) {
        await resume()
        throw error
      }
    },
  }
}

/**
 * The running server backing itself up (the archive's base, PLINTH_BACKUP_ARCHIVE): the same as
 * `backupHost`, in this process.
 */
export function serverSource(store: Store): BackupSource {
  let resume: () => Promise<void> = async () => undefined
  return {
    kind: 'running server',
    blobPath: (sha256) => store.files.path(sha256),
    async copyDatabase(dbDir) {
      resume = store.blobs.pauseReleases()
      await store.env.backup(dbDir, true)
    },
    confirm: async () => undefined,
    finish: () => resume(),
  }
}

/**
 * A stopped data directory, its database opened by the command itself (which holds the directory's
 * lock, so nothing else writes or removes files).
 */
export function stoppedSource(env: RootDatabase, files: { path(sha256: string): string }): BackupSource {
  return {
    kind: 'stopped data directory',
    blobPath: (sha256) => files.path(sha256),
    copyDatabase: (dbDir) => env.backup(dbDir, true),
    confirm: async () => undefined,
    finish: async () => undefined,
  }
}

/**
 * A running server, through its control socket: it copies its database and keeps every blob file
 * until this source's `finish` (or until the command dies and the connection drops).
 */
export async function runningSource(dataDir: string, files: { path(sha256: string): string }): Promise<BackupSource | null> {
  const socket = createConnection(controlSocketPath(dataDir))
  socket.setEncoding('utf8')
  const connected = await new Promise<boolean>((resolve, reject) => {
    socket.once('connect', () => resolve(true))
    socket.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' || error.code === 'ECONNREFUSED' ? resolve(false) : reject(error),
    )
  })
  if (!connected) return null
  let buffer = ''
  const lines: ((line: string) => void)[] = []
  socket.on('data', (chunk: string) => {
    buffer += chunk
    for (let newline = buffer.indexOf('\n'); newline !== -1; newline = buffer.indexOf('\n')) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      lines.shift()?.(line)
    }
  })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const next = () =>
    Promise.race([
      new Promise<string>((resolve) => lines.push(resolve)),
      closed.then(() => {
        throw new Error('the server closed the control socket during the backup (it stopped?); take a new backup')
      }),
    ]).then((line) => JSON.parse(line) as { ok: boolean; error?: { message: string } })
  return {
    kind: 'running server',
    blobPath: (sha256) => files.path(sha256),
    async copyDatabase(dbDir) {
      socket.write(JSON.stringify({ command: 'backup-begin', dbDir }) + '\n')
      const answer = await next()
      if (!answer.ok) throw new Error(`the server could not copy its database: ${answer.error?.message ?? 'failed'}`)
    },
    async confirm() {
      const stopped = () =>
        new Error('the server stopped during the backup, so it no longer kept the files the database copy names; take a new backup')
      if (socket.destroyed) throw stopped()
      socket.write(JSON.stringify({ command: 'backup-alive' }) + '\n')
      const answer = await next().catch(() => null)
      if (answer === null || !answer.ok) throw stopped()
    },
    async finish() {
      if (socket.destroyed) return
      socket.write(JSON.stringify({ command: 'backup-end' }) + '\n')
      await Promise.race([next().catch(() => undefined), closed])
      socket.destroy()
    },
  }
}
