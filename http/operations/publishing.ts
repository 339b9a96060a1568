import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import { StringEnum } from '../../core/schemas/common.js'
import { DeploymentQuery, DeploymentStatus, RollbackBody, TargetBody } from '../../core/schemas/source.js'
import { Website } from '../../core/schemas/website.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { deploymentStatus, websiteResource } from '../resources.js'

const PublishResult = Type.Object({
  website: Website,
  deployment: Type.Object({
    version: Type.Union([Type.Integer(), Type.Null()]),
    status: StringEnum(['building', 'ready', 'failed'] as const),
  }),
})

function published(ctx: OperationContext) {
  const website = ctx.website!
  return {
    website: websiteResource(website, ctx.urls, ctx.registry),
    deployment: { version: website.record.publishedVersion, status: 'ready' as const },
  }
}

const tag = 'Publishing'

export const publishingOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/publish',
    operationId: 'publishing.publish',
    capability: 'publishing.manage',
    rateClass: 'expensive',
    tool: 'publish_website',
    tag,
    summary: 'Publish the head',
    description:
      'Makes the draft head the live version at the published URL. Fails safe: an empty head (400), a running build (409) or a takedown (403) leaves the live site unchanged.',
    params: WebsitePathParams,
    response: PublishResult,
    async handle(ctx) {
      await ctx.website!.publish(auditActor(ctx.principal))
      return published(ctx)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/unpublish',
    operationId: 'publishing.unpublish',
    capability: 'publishing.manage',
    rateClass: 'standard',
    tool: 'unpublish_website',
    tag,
    summary: 'Take the site offline',
    description:
      'Takes the live site offline at once. The head, the draft preview and the version history stay untouched; publish again at any time.',
    params: WebsitePathParams,
    response: PublishResult,
    async handle(ctx) {
      await ctx.website!.unpublish(auditActor(ctx.principal))
      return published(ctx)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/rollback',
    operationId: 'publishing.rollback',
    capability: 'publishing.manage',
    rateClass: 'expensive',
    tool: 'rollback_website',
    tag,
    summary: 'Re-publish an earlier version',
    description:
      'Re-publishes an earlier version: its content is committed as a new head version, then published, so history only grows. Find version numbers with list_versions.',
    params: WebsitePathParams,
    body: RollbackBody,
    response: PublishResult,
    async handle(ctx, { body }) {
      await ctx.website!.rollback(auditActor(ctx.principal), body.version)
      return published(ctx)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/rebuild',
    operationId: 'publishing.rebuild',
    capability: 'publishing.manage',
    rateClass: 'expensive',
    tool: 'rebuild_website',
    tag,
    summary: 'Rebuild a version',
    description:
      'Prepares the serving output of the head, the published version or a given version again from its stored source, and returns its deployment status.',
    params: WebsitePathParams,
    body: TargetBody,
    response: DeploymentStatus,
    async handle(ctx, { body }) {
      const website = ctx.website!
      const version = website.selectVersion(body)
      await website.rebuild(version.version)
      return deploymentStatus(website, version)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/deployments/status',
    operationId: 'deployments.status',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'get_deployment_status',
    tag,
    summary: 'Build status of a version',
    description:
      'Returns the build status (building, ready, failed) of the head, the published version or a version, with canPublish, its routes, who made it and any diagnostics.',
    params: WebsitePathParams,
    query: DeploymentQuery,
    response: DeploymentStatus,
    handle(ctx, { query }) {
      return deploymentStatus(ctx.website!, ctx.website!.selectVersion(query))
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/deployments/ensure',
    operationId: 'deployments.ensure',
    capability: 'source.write',
    rateClass: 'expensive',
    tool: 'ensure_deployment',
    tag,
    summary: 'Build a version ahead of time',
    description:
      'Makes sure the head (or target/version) is built so that publishing it is instant, and returns its deployment status. Static versions are ready as soon as they are committed.',
    params: WebsitePathParams,
    body: TargetBody,
    response: DeploymentStatus,
    async handle(ctx, { body }) {
      const version = ctx.website!.selectVersion(body)
      await ctx.website!.ensureBuilt(version.version)
      return deploymentStatus(ctx.website!, version)
    },
  }),
]
