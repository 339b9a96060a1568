import { spawn, type ChildProcess } from 'node:child_process'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { TestContext } from 'node:test'
import { waitUntil } from './wait.js'

const ENTRY = fileURLToPath(new URL('../../bin/plinth.js', import.meta.url))

export interface LaunchedPlinth {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export interface RunningPlinth extends LaunchedPlinth {
  port: number
}

/**
 * Runs `plinth start` as a child process and returns at once, without waiting for it to listen (a
 * test that polls the port itself, as a supervisor's readiness check would). Killed after the test.
 */
export function launchPlinth(t: TestContext, env: Record<string, string>, nodeArgs: string[] = [], netns?: string): LaunchedPlinth {
  const args = ['--no-node-snapshot', ...nodeArgs, ENTRY, 'start']
  // In a network namespace of the test's (`ip netns exec` execs Node itself: the child is the server).
  const child = spawn(
    netns === undefined ? process.execPath : 'ip',
    netns === undefined ? args : ['netns', 'exec', netns, process.execPath, ...args],
    {
      env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let out = ''
  let err = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return { child, stdout: () => out, stderr: () => err, exited }
}

/**
 * Runs `plinth start` as a child process, as an operator would, and waits until it listens (for
 * `startMs`: a cluster's node that restores a backup and replays the log takes longer than a start).
 * `nodeArgs` go to Node before the entry point (`--import` of a fixture, for instance).
 */
export async function spawnPlinth(
  t: TestContext,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  netns?: string,
  startMs = 15_000,
): Promise<RunningPlinth> {
  const launched = launchPlinth(t, env, nodeArgs, netns)
  const { child, exited } = launched
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`plinth did not start within ${startMs} ms: ${launched.stdout()} ${launched.stderr()}`)),
      startMs,
    )
    const check = () => {
      const match = /listening on [\d.]+:(\d+)/.exec(launched.stdout())
      if (match) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    }
    child.stdout!.on('data', check)
    void exited.then(({ code }) => {
      clearTimeout(timer)
      reject(new Error(`plinth exited with ${code}: ${launched.stdout()} ${launched.stderr()}`))
    })
  })
  return { ...launched, port }
}

/** Runs `plinth start` expecting it to fail; returns exit code and output. */
export function runFailingStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, 'start'], {
      env: { PATH: process.env.PATH, PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
    // A start that did not fail is stopped after a while and reported as such (code null), not left to the test's timeout.
    const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.on('exit', (code) => {
      clearTimeout(deadline)
      resolve({ code, stderr })
    })
  })
}

/** Runs a `plinth` command (not start) to completion; `input` is its standard input (a password). */
export function runCli(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    })
    child.stdin?.end(input)
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Whether something accepts TCP connections on `host:port` now. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

/** A process a test started found its port taken (by another test's process between the pick and the start). */
export class PortTakenError extends Error {}

/**
 * Waits until `ready` says a process a test started is up (its port accepts connections, a file it
 * makes exists), probing as waitUntil does. If the process exits first, fails at once with its
 * output: a PortTakenError when it said its address was in use (the caller starts it again on fresh
 * ports), otherwise an Error naming `what`.
 */
export async function untilUp(
  child: ChildProcess,
  ready: () => boolean | Promise<boolean>,
  what: string,
  output: () => string,
  timeoutMs = 15_000,
): Promise<void> {
  await waitUntil(
    async () => {
      if (await ready()) return true
      if (child.exitCode === null && child.signalCode === null) return false
      const said = output().slice(-3000)
      if (/address already in use|EADDRINUSE/i.test(said)) throw new PortTakenError(`${what}: its port was taken meanwhile: ${said}`)
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before it was up: ${said}`)
    },
    `${what} to be up`,
    timeoutMs,
  )
}
