// A framework version's build as publishing needs it: ready, or the 409 (still building) or 400 (failed) that says why not.
import { ApiError } from '../../core/errors.js'
import type { BuildRecord } from '../../core/schemas/records.js'
import type { FrameworkBuilds } from './builds.js'

/**
 * A framework version's ready build (null for static sites, which have no builds); 409 while
 * building (a version never asked for starts building now), 400 with the diagnostics when it failed.
 */
export function requireReadyBuild(
  builds: FrameworkBuilds | null,
  websiteId: string,
  version: number,
  ensureBuilt: (version: number) => Promise<void>,
): BuildRecord | null {
  if (builds === null) return null
  const state = builds.status(version)
  if (state === null || state.status === 'building') {
    if (state === null) void ensureBuilt(version)
    throw new ApiError(
      'conflict',
      `Version ${version} is still building; poll GET /v1/websites/${websiteId}/deployments/status (MCP: get_deployment_status) and publish when it is ready`,
    )
  }
  if (state.status === 'failed') {
    const result = state.result!
    throw new ApiError(
      'validation',
      `Version ${version} did not pass the quality gate${result.message ? `: ${result.message}` : ''}; fix the diagnostics and render failures, then publish again`,
      {
        diagnostics: result.diagnostics,
        renderFailures: result.renderFailures,
      },
    )
  }
  return state.record!
}
