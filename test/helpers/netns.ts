import { execFileSync, spawn } from 'node:child_process'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { untilUp } from './process.js'
import { existsSync } from 'node:fs'

/*
 * Network namespaces for the cluster's fault tests (as root). Every address they use other than
 * loopback lives in a namespace the test makes and removes: a hub namespace holds the NATS servers (on
 * NATS_ADDRESS, its own loopback) and routes between the nodes, each Plinth node runs in a namespace of
 * its own joined to the hub by a veth pair, and forwarding is switched on in the hub only. Cutting a
 * node off removes its default route: it keeps running and the hub still reaches it on the pair's own
 * subnet, but it reaches neither NATS nor another node. The test process, outside every namespace,
 * talks to a node through a Unix socket (a path on disk, which crosses namespaces) that a small relay
 * in the hub forwards to the node's port.
 */

/** Where the test's NATS servers listen: the hub's loopback, which the nodes reach through their route. */
export const NATS_ADDRESS = '10.78.0.1'

const HUB = 'plinth-test-hub'

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

function quietly(fn: () => void): void {
  try {
    fn()
  } catch {
    // Already gone (a run before this one cleaned up, or never made it).
  }
}

/** A relay run inside the hub: each connection to the Unix socket is piped to host:port. */
const RELAY = `
const net = require('node:net')
const [socket, host, port] = process.argv.slice(1)
net.createServer((client) => {
  const upstream = net.connect(Number(port), host)
  client.pipe(upstream).pipe(client)
  const end = () => (client.destroy(), upstream.destroy())
  client.on('error', end)
  upstream.on('error', end)
}).listen(socket, () => console.log('relaying'))
`

export interface Hub {
  /** The hub's name (`ip netns exec NAME …`: the NATS servers run there). */
  name: string
  /** A Unix socket the test connects to for host:port as the hub reaches it (a relay in the hub, stopped after the test). */
  relay(host: string, port: number): Promise<string>
}

/** The hub namespace: NATS_ADDRESS on its loopback and forwarding on, inside it only; removed after the test. */
export function makeHub(t: TestContext, dir: string): Hub {
  quietly(() => ip('netns', 'del', HUB))
  ip('netns', 'add', HUB)
  t.after(() => quietly(() => ip('netns', 'del', HUB)))
  const within = (...args: string[]) => ip('netns', 'exec', HUB, ...args)
  within('ip', 'link', 'set', 'lo', 'up')
  within('ip', 'addr', 'add', `${NATS_ADDRESS}/32`, 'dev', 'lo')
  within('sysctl', '-qw', 'net.ipv4.ip_forward=1')
  let relays = 0
  return {
    name: HUB,
    relay: async (host, port) => {
      const socket = join(dir, `relay-${++relays}.sock`)
      const child = spawn('ip', ['netns', 'exec', HUB, process.execPath, '-e', RELAY, socket, host, String(port)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let said = ''
      child.stdout!.on('data', (c: Buffer) => (said += c.toString()))
      child.stderr!.on('data', (c: Buffer) => (said += c.toString()))
      t.after(() => void child.kill('SIGKILL'))
      await untilUp(
        child,
        () => said.includes('relaying') && existsSync(socket),
        `the relay to ${host}:${port}`,
        () => said,
      )
      return socket
    },
  }
}

export interface Namespace {
  /** The namespace's name (`ip netns exec NAME …`). */
  name: string
  /** The node's address in it, which the hub and the other nodes reach. */
  address: string
  /** Removes its default route: from now on it reaches neither NATS nor another node. */
  cut(): void
  /** Gives the route back. */
  heal(): void
}

/** Namespace `index` (1 to 250) joined to the hub: 10.77.index.2 inside, 10.77.index.1 the hub's end; removed after the test. */
export function makeNamespace(t: TestContext, hub: Hub, index: number): Namespace {
  const name = `plinth-test-${index}`
  const outside = `plt${index}h`
  const inside = `plt${index}n`
  const gateway = `10.77.${index}.1`
  const address = `10.77.${index}.2`
  quietly(() => ip('netns', 'del', name))
  ip('netns', 'add', name)
  t.after(() => quietly(() => ip('netns', 'del', name)))
  ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside)
  ip('link', 'set', outside, 'netns', hub.name)
  ip('link', 'set', inside, 'netns', name)
  const inHub = (...args: string[]) => ip('netns', 'exec', hub.name, 'ip', ...args)
  inHub('addr', 'add', `${gateway}/24`, 'dev', outside)
  inHub('link', 'set', outside, 'up')
  const within = (...args: string[]) => ip('netns', 'exec', name, 'ip', ...args)
  within('link', 'set', 'lo', 'up')
  within('addr', 'add', `${address}/24`, 'dev', inside)
  within('link', 'set', inside, 'up')
  within('route', 'add', 'default', 'via', gateway)
  return {
    name,
    address,
    cut: () => within('route', 'del', 'default'),
    heal: () => within('route', 'add', 'default', 'via', gateway),
  }
}
