/** The check, before listening, that no other process holds the port. */

import { createServer } from 'node:net'

/**
 * Refuses a port another process holds. uWebSockets.js listens with SO_REUSEPORT, and the kernel lets
 * a second SO_REUSEPORT socket on a taken port "listen" too, splitting connections between the two
 * processes: a second server would seem to start and then answer half of every client's requests.
 * A plain socket (no SO_REUSEPORT) cannot bind a port any process listens on, so binding one for a
 * moment tells whether the port is free. Port 0 (any free port) needs no check.
 */
export function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve()
  return probe(host, port).then(
    () => undefined,
    (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'is in use by another process (another Plinth, or any other server)'
          : `cannot be listened on (${error.code ?? error.message})`
      throw new Error(`port ${port} on ${host} ${why}; stop that process, or set PORT to a free port`)
    },
  )
}

/**
 * A port free now, for a server that asked for any (port 0) but runs serving threads: uWS sets
 * SO_REUSEPORT only on a socket bound to a named port, so the threads can share the port only when
 * the main thread names one.
 */
export function freePort(host: string): Promise<number> {
  return probe(host, 0)
}

/** Binds a plain socket (no SO_REUSEPORT) on the port for a moment; resolves with the port it got. */
function probe(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createServer()
    socket.once('error', reject)
    socket.listen({ host, port, exclusive: true }, () => {
      const bound = (socket.address() as { port: number }).port
      socket.close(() => resolve(bound))
    })
  })
}
