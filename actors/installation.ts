import type { Clock } from '../core/clock.js'
import { newApiKeySecret, newId } from '../core/ids.js'
import { existsSync } from 'node:fs'
import type { Logger } from '../core/log.js'
import { newSecret, readableByOthers, readSecretFile, sameSecret, SecretFileError, writeSecretFile } from '../core/installation-secret.js'
import type { Store } from '../core/store/store.js'
import { insertOwnerPerson } from './identity/people.js'
import { MIGRATIONS } from './migrations.js'
import { insertApiKey } from './organization/organization.js'
import { insertOrganization } from './organization/records.js'

export interface Installation {
  orgId: string
  ownerId: string
  /** Present only on the first start, when Plinth made the admin key's secret itself. */
  generatedSecret: string | null
  /**
   * The owner's one-time setup code (`{app_url}/setup#token=…`, valid 24 hours): on the first start,
   * and on a start that finds an installation whose owner cannot sign in yet (made before people existed).
   */
  setupCode: string | null
  /** True on the first start of an empty data directory. */
  created: boolean
}

/**
 * On the first start of an empty data directory: the owner (a person without email or password yet),
 * their personal workspace, an admin key of organization scope and the owner's setup code, all in
 * one transaction. Later starts change nothing, except that an installation made before people
 * existed gets its owner person (and a setup code) once.
 */
export async function ensureInstallation(store: Store, clock: Clock, adminKey: string | null): Promise<Installation> {
  const existing = store.meta.get('installation')
  const now = clock.now()
  if (existing !== undefined) {
    if (store.persons.get(existing.ownerId) !== undefined)
      return { orgId: existing.orgId, ownerId: existing.ownerId, generatedSecret: null, setupCode: null, created: false }
    const setupCode = await store.commit(() => insertOwnerPerson(store, existing.ownerId, existing.orgId, now))
    return { orgId: existing.orgId, ownerId: existing.ownerId, generatedSecret: null, setupCode, created: false }
  }
  const secret = adminKey ?? newApiKeySecret()
  const orgId = newId('org')
  const ownerId = newId('usr')
  const setupCode = await store.commit(() => {
    if (store.meta.get('installation') !== undefined) throw new Error('installation raced with another start')
    insertOrganization(store, { v: 1, id: orgId, name: 'My organization', createdAt: now })
    const code = insertOwnerPerson(store, ownerId, orgId, now)
    insertApiKey(store, orgId, { kind: 'user', id: ownerId, name: 'Owner' }, now, {
      name: 'Admin key (first start)',
      access: { kind: 'organization', role: 'admin' },
      expiresAt: null,
      secret,
    })
    store.meta.put('installation', { v: 1, orgId, ownerId, createdAt: now, migrations: MIGRATIONS.map((migration) => migration.id) })
    return code
  })
  return { orgId, ownerId, generatedSecret: adminKey === null ? secret : null, setupCode, created: true }
}

/**
 * The API origin a cluster serves at (every node must give the same: the address in front of them all).
 * The first node that leads records its own; resolves the recorded one (this node's while none is, on a replica).
 */
export async function clusterOrigin(store: Store, origin: string, leading: boolean): Promise<string> {
  const recorded = store.meta.get('installation')?.apiOrigin
  if (recorded !== undefined) return recorded
  if (leading) await store.commit(() => store.meta.put('installation', { ...store.meta.get('installation')!, apiOrigin: origin }))
  return origin
}

/**
 * Runs each schema migration (actors/migrations.ts) the installation has not recorded, in order, then
 * records it (one more commit). Called where this process writes: the embedded server's start, and a
 * cluster's primary when it starts leading (the replicas apply its commits from the log; a later
 * primary finds them recorded). Nothing to do before the installation exists: a new one records every
 * migration of its build as done when it is made (its records start at this build's schema).
 */
export async function runMigrations(store: Store, clock: Clock, log: Logger): Promise<void> {
  for (const migration of MIGRATIONS) {
    const installation = store.meta.get('installation')
    if (installation === undefined || !store.writable) return
    if (installation.migrations?.includes(migration.id)) continue
    const started = clock.now()
    const records = await migration.run(store)
    await store.commit(() => {
      const now = store.meta.get('installation')!
      store.meta.put('installation', { ...now, migrations: [...(now.migrations ?? []), migration.id] })
    })
    log.info('ran a schema migration (once for the installation)', {
      id: migration.id,
      what: migration.what,
      records,
      ms: clock.now() - started,
    })
  }
}

/** The name a data directory from before PLINTH_SECRET_FILE kept the installation's secret under. */
const HELD_SECRET = 'webhook-signing'

/**
 * The installation's secret (every signing key derives from it), from its file: made there on the
 * first start (the embedded server only; a cluster's node is given it). A data directory from before
 * the file kept it in the database: it moves to the file (the same bytes, so every webhook secret and
 * share link stays as it was) and leaves the database, so no backup holds it from then on. A file
 * that disagrees with what the database holds is refused: everything signed before would stop
 * verifying.
 */
export async function installationSecret(store: Store, path: string, log: Logger): Promise<Buffer> {
  const held = store.legacySecrets.get(HELD_SECRET)
  let secret: Buffer
  if (existsSync(path)) {
    secret = readSecretFile(path)
    if (held !== undefined && !sameSecret(held, secret))
      throw new SecretFileError(
        `the installation's secret file ${path} holds another secret than the one this data directory was made with (it kept its own in the database before PLINTH_SECRET_FILE existed): point PLINTH_SECRET_FILE at this installation's file, or move ${path} away and start again to have it written from the database`,
      )
    if (readableByOthers(path)) log.warn(`the installation's secret file ${path} can be read by users other than its owner: chmod 600 it`)
  } else {
    // A cluster's node is refused earlier (core/config.ts) without the file: each node must hold the same one.
    secret = held ?? newSecret()
    writeSecretFile(path, secret)
    log.info(
      held === undefined
        ? `made the installation's secret in ${path}: backups do not hold it, so keep a copy apart from them (a restore needs it)`
        : `moved the installation's secret out of the database into ${path}: backups no longer hold it, so keep a copy apart from them (a restore needs it)`,
    )
  }
  // A replica writes nothing; a cluster's data directory never held it (clusters are made with the file).
  if (held !== undefined && store.writable)
    await store.commit(() => {
      if (store.legacySecrets.doesExist(HELD_SECRET)) void store.legacySecrets.remove(HELD_SECRET)
    })
  return secret
}
