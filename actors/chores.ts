// The registry's background chores: what expired swept away, scheduled items published, webhooks and events sent on.
import type { Logger } from '../core/log.js'
import {
  ACTOR_IDLE_MS,
  ANON_SWEEP_MS,
  CMS_PUBLISH_TICK_MS,
  MAIL_POLL_MS,
  MAIL_SWEEP_MS,
  TRACKER_FLUSH_MS,
  WEBHOOK_POLL_MS,
} from '../core/limits.js'
import type { StoreReader } from '../core/store/reader.js'
import type { Background } from './background.js'
import type { AnonymousCredentials } from './anonymous/credentials.js'
import type { Tracker } from './analytics/tracker.js'
import type { Cms } from './cms/cms.js'
import type { Assets } from './files/assets.js'
import type { LargeFiles } from './files/large-files.js'
import type { SharedFiles } from './files/storage.js'
import type { Forms } from './forms/forms.js'
import type { WebhookDeliverer } from './forms/webhooks.js'
import type { Mail } from './mail/mail.js'
import type { OAuth } from './identity/oauth.js'
import type { People } from './identity/people.js'
import type { SitePasswords } from './website/passwords.js'
import type { RegistryOptions } from './registry-options.js'

/** The concerns the chores touch (the registry's). */
interface ChoreParts {
  people: People
  oauth: OAuth
  anonymous: AnonymousCredentials
  files: SharedFiles
  largeFiles: LargeFiles
  assets: Assets
  sitePasswords: SitePasswords
  cms: Cms
  webhooks: WebhookDeliverer
  tracker: Tracker
  mail: Mail
  forms: Forms
  /** A website's name and organization (a digest names its site). */
  website(id: string): { record: { orgId: string; name: string } } | undefined
  log: Logger
  reads: StoreReader
}

/**
 * Each chore handed to the one scheduler (background.ts: a turn runs only where writes are made, one at
 * a time): expired anonymous websites, expired sessions, tokens and files, scheduled CMS publications,
 * form webhooks and the tracker's events. A period of 0 in the options turns a chore off (tests, the
 * offline CLI); `beaconFlushMs: 0` turns off the publications and the tracker's flushes too.
 */
export class Chores {
  #anonymousSweep: Promise<unknown> | null = null

  constructor(
    private readonly parts: ChoreParts,
    background: Background,
    options: Pick<RegistryOptions, 'beaconFlushMs' | 'anonymousSweepMs' | 'actorIdleMs' | 'webhookPollMs' | 'mailPollMs'>,
  ) {
    // The offline CLI and some tests turn the flushing chores off with the beacon's (beaconFlushMs: 0).
    const flushing = options.beaconFlushMs !== 0
    background.every('sweeping expired anonymous websites', options.anonymousSweepMs ?? ANON_SWEEP_MS, () => this.sweepAnonymous())
    background.every('sweeping expired sessions and tokens', options.actorIdleMs ?? ACTOR_IDLE_MS, () => this.sweepExpired())
    background.every('publishing scheduled CMS items', flushing ? CMS_PUBLISH_TICK_MS : 0, () => parts.cms.publishDue())
    background.every('delivering form webhooks', options.webhookPollMs ?? WEBHOOK_POLL_MS, () => parts.webhooks.deliverDue())
    background.every("writing the tracker's events (they were not counted)", flushing ? TRACKER_FLUSH_MS : 0, () => parts.tracker.flush())
    background.every('sending mail', options.mailPollMs ?? MAIL_POLL_MS, () => parts.mail.sender.sendDue())
    background.every('sending form digests', options.mailPollMs ?? MAIL_POLL_MS, () =>
      parts.forms.notifications.sendDigests((id) => {
        const site = parts.website(id)?.record
        return site === undefined ? undefined : { id, orgId: site.orgId, name: site.name }
      }),
    )
    background.every('dropping mail older than 30 days', options.mailPollMs === 0 ? 0 : MAIL_SWEEP_MS, () => parts.mail.sweep())
  }

  /** Removes expired sessions, setup codes, OAuth codes and tokens, expired shared files, unused large deploy files. Returns how many went. */
  sweepExpired(): Promise<number> {
    const { people, oauth, anonymous, largeFiles, assets } = this.parts
    // In the people mailbox, so shutdown (drained) waits for a sweep under way.
    return people.mailbox.run(
      async () =>
        (await people.sweepExpired()) +
        (await oauth.sweepExpired()) +
        (await anonymous.sweepClaimCodes()) +
        (await this.#sweepFiles()) +
        (await largeFiles.sweep()) +
        (await assets.sweep()),
    )
  }

  /** Shared files past their life; a folder left without files loses its passwords too (its label went with the files). */
  async #sweepFiles(): Promise<number> {
    const swept = await this.parts.files.sweep()
    for (const { websiteId, folder } of swept.emptied) {
      const website = this.parts.reads.websites.get(websiteId)
      if (website !== undefined) await this.parts.sitePasswords.moveFolder(website, folder, null)
    }
    return swept.count
  }

  /** Resolves when the anonymous sweep under way (if any) has finished (shutdown). */
  async drained(): Promise<void> {
    await this.#anonymousSweep
  }

  /** One pass of the anonymous sweeper (never two at once); resolves with how many deadlines it acted on. */
  sweepAnonymous(): Promise<unknown> {
    const log: Logger = this.parts.log
    this.#anonymousSweep ??= this.parts.anonymous
      .sweep()
      .catch((error: unknown) => log.error('anonymous sweep failed', { error: (error as Error)?.stack ?? String(error) }))
      .finally(() => (this.#anonymousSweep = null))
    return this.#anonymousSweep
  }
}
