#!/usr/bin/env node
import { ConfigError, loadConfig } from '../core/config.js'
import { stderrLogger } from '../core/log.js'
import { startPlinth } from '../http/server.js'

/**
 * `plinth start`: run the server on the environment's configuration.
 * SIGTERM and SIGINT drain in-flight requests and close the database before exiting.
 */
async function start(): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`plinth: configuration error: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
  const plinth = await startPlinth({ config, log: stderrLogger })
  const { installation, urls } = plinth
  if (installation.created) {
    process.stdout.write(`Created organization ${installation.orgId} with an admin API key of organization scope.\n`)
    if (installation.generatedSecret !== null) {
      process.stdout.write(`Admin API key (shown once, store it now): ${installation.generatedSecret}\n`)
    } else {
      process.stdout.write('Admin API key: the secret given in PLINTH_ADMIN_KEY.\n')
    }
  }
  process.stdout.write(
    `Plinth listening on ${config.host}:${plinth.port}\n  API     ${urls.apiOrigin}/v1  (OpenAPI ${urls.api('/openapi.json')}, MCP ${urls.api('/v1/mcp')})\n  sites   ${urls.published('{sub}')} and ${urls.draft('{sub}')}\n`,
  )
  const stop = (signal: string) => {
    stderrLogger.info(`${signal}: draining requests and closing the database`)
    plinth.close().then(
      () => process.exit(0),
      (error: unknown) => {
        stderrLogger.error('shutdown failed', { error: String(error) })
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
}

const command = process.argv[2] ?? 'start'
if (command === 'start') {
  start().catch((error: unknown) => {
    process.stderr.write(`plinth: ${(error as Error).message}\n`)
    process.exit(1)
  })
} else {
  process.stderr.write(`plinth: unknown command ${command}\nusage: plinth start\n`)
  process.exit(2)
}
