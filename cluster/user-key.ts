import { nkeys } from '@nats-io/transport-node'

/**
 * A new NATS user key (an nkey) for a cluster's nodes: its seed, the secret the nodes connect with
 * (PLINTH_CLUSTER_NATS_CREDS), and its public key, which the nats-servers' configuration names.
 */
export function newUserKey(): { seed: string; publicKey: string } {
  const user = nkeys.createUser()
  return { seed: new TextDecoder().decode(user.getSeed()), publicKey: user.getPublicKey() }
}
