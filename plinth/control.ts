import { chmodSync, rmSync } from 'node:fs'
import { createConnection, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { runOperatorCommand, type OperatorCommand } from '../actors/operator.js'
import type { Registry } from '../actors/registry.js'
import { errorBody } from '../core/errors.js'

/** The operator's control socket inside the data directory (owner-only permissions). */
export function controlSocketPath(dataDir: string): string {
  return join(dataDir, 'control.sock')
}

/**
 * A local socket through which the `plinth` command line reaches a running server, so an operator
 * command runs through the same actor as API commands and takes effect on the live hosting plane.
 * One JSON request line in, one JSON answer line out.
 */
export function startControlSocket(
  dataDir: string,
  registry: Registry,
  /** Resolves once every serving thread applied the routing changes made so far (null: nothing to wait for). */
  servingSettled: () => Promise<void> | null = () => null,
): Promise<Server> {
  const path = controlSocketPath(dataDir)
  rmSync(path, { force: true })
  const server = createServer((socket) => {
    let buffer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      buffer += chunk
      const newline = buffer.indexOf('\n')
      if (newline === -1) return
      let command: OperatorCommand
      try {
        command = JSON.parse(buffer.slice(0, newline)) as OperatorCommand
      } catch {
        socket.end(JSON.stringify({ ok: false, error: { kind: 'validation', message: 'not JSON' } }) + '\n')
        return
      }
      // Like an API answer, the operator's waits until every serving thread applied the change (a suspension serves nothing).
      const run = async () => {
        const answer = await runOperatorCommand(registry, command)
        await servingSettled()
        return answer
      }
      run().then(
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
