import { chmodSync, existsSync, readdirSync, rmSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { isAbsolute } from 'node:path'
import { runOperatorCommand, type OperatorCommand } from '../actors/operator.js'
import type { Registry } from '../actors/registry.js'
import type { ClusterNode } from '../cluster/node.js'
import { crashPoint } from '../core/crash.js'
import { ApiError, errorBody } from '../core/errors.js'

import { controlSocketPath } from './control-path.js'

export { controlSocketPath }

/** The server's side of a backup (plinth/start.ts gives it the store): see `backupSession`. */
export interface BackupHost {
  /**
   * Stops removing blob files and copies the database into `dbDir` at one read transaction; resolves
   * with the function that lets removals go on again (called when the backup ends or its socket closes).
   */
  begin(dbDir: string): Promise<() => Promise<void>>
}

/**
 * A local socket through which the `plinth` command line reaches a running server, so an operator
 * command runs through the same actor as API commands and takes effect on the live hosting plane.
 * One JSON request line in, one JSON answer line out; a backup holds its connection open (below).
 */
export function startControlSocket(
  dataDir: string,
  run: (command: OperatorCommand) => Promise<{ message: string }>,
  backups: BackupHost | null = null,
): Promise<Server> {
  const path = controlSocketPath(dataDir)
  rmSync(path, { force: true })
  const server = createServer((socket) => {
    let buffer = ''
    let handled = false
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      buffer += chunk
      const newline = buffer.indexOf('\n')
      if (newline === -1 || handled) return
      handled = true
      let command: OperatorCommand | { command: 'backup-begin'; dbDir: string }
      try {
        command = JSON.parse(buffer.slice(0, newline)) as typeof command
      } catch {
        socket.end(JSON.stringify({ ok: false, error: { kind: 'validation', message: 'not JSON' } }) + '\n')
        return
      }
      buffer = buffer.slice(newline + 1)
      if (command.command === 'backup-begin') return backupSession(socket, backups, command.dbDir)
      run(command).then(
        (answer) => socket.end(JSON.stringify({ ok: true, answer }) + '\n'),
        (error: unknown) => socket.end(JSON.stringify({ ok: false, error: errorBody(error) }) + '\n'),
      )
    })
    socket.on('error', () => socket.destroy())
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      chmodSync(path, 0o600)
      resolve(server)
    })
  })
}

/** How long a replica waits for the primary's answer to an operator's command. */
const PRIMARY_ANSWER_MS = 30_000

/**
 * How a running server runs an operator's command. Like an API answer, the operator's waits until
 * every serving thread applied the change (a suspension serves nothing) and, on a cluster's primary,
 * every live replica. A replica runs none itself (its writes would be outside the log): it hands the
 * command to the primary, sealed, and gives back the primary's answer.
 */
export function operatorRunner(
  registry: Registry,
  /** Resolves once every serving thread applied the routing changes made so far (null: nothing to wait for). */
  servingSettled: () => Promise<void> | null,
  cluster: ClusterNode | null,
): (command: OperatorCommand) => Promise<{ message: string }> {
  const here = async (command: OperatorCommand) => {
    const answer = await runOperatorCommand(registry, command)
    await servingSettled()
    await cluster?.replicated()
    return answer
  }
  if (cluster === null) return here
  cluster.exchange.onOperator((command) => here(command as OperatorCommand))
  return async (command) => {
    if (cluster.role === 'primary') return here(command)
    const leader = cluster.leader
    if (leader === null)
      throw new ApiError(
        'unavailable',
        `No node leads the cluster right now (an election is under way): nothing was changed; try again in a few seconds`,
      )
    const answer = await cluster.exchange.askPrimary(command, PRIMARY_ANSWER_MS)
    if (answer === null)
      throw new ApiError(
        'unavailable',
        `The cluster's primary (${leader.node}) did not answer within ${PRIMARY_ANSWER_MS / 1000} s: the command's outcome is unknown; look (plinth mail list, the API) before running it again`,
      )
    if (!answer.ok) {
      const { kind, message, details } = answer.error!
      throw new ApiError(kind, message, details)
    }
    return answer.answer as { message: string }
  }
}

/**
 * A backup of the running server, driven by `plinth backup` (core/backup/take.ts): the server copies
 * its database into the empty directory the command names and answers; the command then copies the
 * blob files the copy names and writes the manifest, while the server removes none of them; when the
 * command says it is done, or its connection drops (it was killed), removals go on.
 */
function backupSession(socket: Socket, backups: BackupHost | null, dbDir: string): void {
  if (backups === null) {
    socket.end(JSON.stringify({ ok: false, error: { kind: 'validation', message: 'this server takes no backups' } }) + '\n')
    return
  }
  if (typeof dbDir !== 'string' || !isAbsolute(dbDir) || !existsSync(dbDir) || readdirSync(dbDir).length > 0) {
    socket.end(JSON.stringify({ ok: false, error: { kind: 'validation', message: `${String(dbDir)} is not an empty directory` } }) + '\n')
    return
  }
  let resume: (() => Promise<void>) | null = null
  let over = false
  const end = () => {
    over = true
    void resume?.()
  }
  socket.once('close', end)
  backups.begin(dbDir).then(
    (release) => {
      resume = release
      if (over) return void release()
      socket.write(JSON.stringify({ ok: true, answer: { message: 'database copied' } }) + '\n')
      // Then the command asks whether the server still keeps every file (before it writes the manifest), and says when it is over.
      let pending = ''
      socket.on('data', (chunk: string) => {
        pending += chunk
        for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
          const line = pending.slice(0, newline)
          pending = pending.slice(newline + 1)
          if (line.includes('"backup-alive"')) {
            crashPoint('backup:confirming')
            socket.write(JSON.stringify({ ok: true, answer: { message: 'still keeping every file' } }) + '\n')
          } else socket.end(JSON.stringify({ ok: true, answer: { message: 'removals resumed' } }) + '\n')
        }
      })
    },
    (error: unknown) => socket.end(JSON.stringify({ ok: false, error: errorBody(error) }) + '\n'),
  )
}

/** Sends one command to a running server; resolves null when no server listens on the socket. */
export function sendControlCommand(
  dataDir: string,
  command: OperatorCommand,
): Promise<{ ok: boolean; answer?: { message: string }; error?: { message: string } } | null> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(controlSocketPath(dataDir))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('connect', () => socket.write(JSON.stringify(command) + '\n'))
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => {
      try {
        resolve(JSON.parse(answer))
      } catch (error) {
        reject(error)
      }
    })
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(null)
      else reject(error)
    })
  })
}
