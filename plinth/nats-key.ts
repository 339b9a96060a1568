// The CLI's door to the cluster's keys (`plinth nats-key`): bin/ reaches cluster/ only through plinth/.
export { newUserKey } from '../cluster/user-key.js'
