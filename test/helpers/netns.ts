import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import type { TestContext } from 'node:test'

/*
 * Network namespaces for the cluster's fault tests (as root): each Plinth node runs in a namespace of
 * its own, joined to the test's by a veth pair, and reaches the NATS servers (and the other nodes)
 * only through its default route. Cutting a node off removes that route: the node keeps running and
 * the test still reaches it on the pair's own subnet, but it reaches neither NATS nor another node.
 */

/** The kernel's switch for forwarding between interfaces (here: between the namespaces' veth pairs). */
const FORWARDING = '/proc/sys/net/ipv4/ip_forward'

/** Where the test's NATS servers listen: an address of the test's loopback that namespaces reach through their route. */
export const NATS_ADDRESS = '10.78.0.1'

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

/**
 * Gives the loopback NATS_ADDRESS and lets the kernel forward between namespaces (node to node)
 * for the test; both undone after it.
 */
export function routeNamespaces(t: TestContext): void {
  const forwarding = readFileSync(FORWARDING, 'utf8').trim()
  writeFileSync(FORWARDING, '1')
  quietly(() => ip('addr', 'del', `${NATS_ADDRESS}/32`, 'dev', 'lo'))
  ip('addr', 'add', `${NATS_ADDRESS}/32`, 'dev', 'lo')
  t.after(() => {
    quietly(() => ip('addr', 'del', `${NATS_ADDRESS}/32`, 'dev', 'lo'))
    writeFileSync(FORWARDING, forwarding)
  })
}

export interface Namespace {
  /** The namespace's name (`ip netns exec NAME …`). */
  name: string
  /** The node's address in it, which the test and the other nodes reach. */
  address: string
  /** Removes its default route: from now on it reaches neither NATS nor another node. */
  cut(): void
  /** Gives the route back. */
  heal(): void
}

/** Namespace `index` (1 to 250): 10.77.index.2 inside, 10.77.index.1 the test's end; removed after the test. */
export function makeNamespace(t: TestContext, index: number): Namespace {
  const name = `plinth-test-${index}`
  const outside = `plt${index}h`
  const inside = `plt${index}n`
  const gateway = `10.77.${index}.1`
  const address = `10.77.${index}.2`
  quietly(() => ip('netns', 'del', name))
  quietly(() => ip('link', 'del', outside))
  ip('netns', 'add', name)
  ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside)
  ip('link', 'set', inside, 'netns', name)
  ip('addr', 'add', `${gateway}/24`, 'dev', outside)
  ip('link', 'set', outside, 'up')
  const within = (...args: string[]) => ip('netns', 'exec', name, 'ip', ...args)
  within('link', 'set', 'lo', 'up')
  within('addr', 'add', `${address}/24`, 'dev', inside)
  within('link', 'set', inside, 'up')
  within('route', 'add', 'default', 'via', gateway)
  t.after(() => {
    quietly(() => ip('link', 'del', outside))
    quietly(() => ip('netns', 'del', name))
  })
  return {
    name,
    address,
    cut: () => within('route', 'del', 'default'),
    heal: () => within('route', 'add', 'default', 'via', gateway),
  }
}
