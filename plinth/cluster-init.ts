// `plinth cluster init`: an embedded installation's data directory becomes a new cluster's first node.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../core/config.js'
import { readSecretFile, sameSecret, SECRET_FILE_NAME, SecretFileError } from '../core/installation-secret.js'
import type { Logger } from '../core/log.js'
import { lockDataDir } from '../core/store/lock.js'
import { Store } from '../core/store/store.js'
import { ClusterNode } from '../cluster/node.js'
import { homeOf } from '../cluster/node-name.js'
import { seedLog, type Seeded } from '../cluster/seed.js'

/** Why `plinth cluster init` changed nothing (exit 2). */
export class ClusterInitError extends Error {}

/**
 * Seeds a new cluster's log (nothing in it yet, nobody leading) from PLINTH_DATA_DIR, an embedded
 * installation's data directory, its server stopped: every record and blob file, so a node started on
 * an empty data directory replays the log into the same installation. The directory then is this
 * node's (PLINTH_NODE_NAME), at the log's last entry: started with the same settings, it joins as any
 * node does. The installation's secret must be the one it was made with (PLINTH_SECRET_FILE on every
 * node: sessions, webhook secrets and share links are signed with keys derived from it).
 */
export async function initCluster(config: Config, logger: Logger): Promise<Seeded> {
  if (config.cluster === null)
    throw new ClusterInitError(
      'plinth cluster init needs the settings of the node it makes (PLINTH_CLUSTER_NATS, PLINTH_NODE_NAME, PLINTH_NODE_URL, PLINTH_SECRET_FILE)',
    )
  const unlock = lockDataDir(config.dataDir)
  try {
    const secret = readSecretFile(config.secretFile)
    const own = join(config.dataDir, SECRET_FILE_NAME)
    if (existsSync(own) && own !== config.secretFile && !sameSecret(readSecretFile(own), secret))
      throw new SecretFileError(
        `${config.secretFile} (PLINTH_SECRET_FILE) holds another secret than ${own}, the one this installation was made with: everything signed with it would stop verifying. Give every node a copy of ${own} as PLINTH_SECRET_FILE`,
      )
    const store = await Store.open(config.dataDir, { replicated: true })
    try {
      const node = await ClusterNode.connect({ ...config.cluster, home: homeOf(config.dataDir) }, secret, logger)
      try {
        const standing = await node.assess(store)
        if (standing.kind !== 'embedded')
          throw new ClusterInitError(
            store.replication!.position() !== null
              ? "this data directory is a cluster node's already (it applied a cluster's log): start it with plinth start"
              : "this data directory holds no installation to seed a cluster with: start the cluster's first node on it (or on an empty one) with plinth start",
          )
        const { last } = await node.bounds()
        if (last !== 0)
          throw new ClusterInitError(
            `the cluster's log holds ${last} entries already: plinth cluster init seeds a new cluster only: a cluster holds one installation, and this one has its own (NATS with an empty PLINTH_LOG stream makes a new cluster)`,
          )
        if (!(await node.leadNew(store)))
          throw new ClusterInitError(
            'a node leads this cluster already: plinth cluster init seeds a new cluster only, before any node starts',
          )
        return await seedLog(node, store, logger)
      } finally {
        await node.close()
      }
    } finally {
      await store.close()
    }
  } finally {
    unlock()
  }
}
