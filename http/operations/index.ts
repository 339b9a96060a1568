import type { AnyOperation } from '../operation.js'
import { anonymousOperations } from './anonymous.js'
import { formOperations } from './forms.js'
import { formNotificationOperations } from './form-notifications.js'
import { storageOperations } from './storage.js'
import { storagePartOperations } from './storage-parts.js'
import { assetOperations } from './assets.js'
import { cmsOperations } from './cms.js'
import { legacyPageOperations } from './pages.js'
import { blogOperations } from './blog.js'
import { domainOperations } from './domains.js'
import { namespaceOperations } from './namespaces.js'
import { analyticsOperations, analyticsShareOperations } from './analytics.js'
import { apiKeyOperations } from './api-keys.js'
import { auditLogOperations } from './audit-log.js'
import { codeOperations } from './code.js'
import { meOperations } from './me.js'
import { accountOperations } from './account.js'
import { shareOperations } from './share.js'
import { memberOperations } from './members.js'
import { transferOperations } from './transfers.js'
import { billingOperations } from './billing.js'
import { platformOperations } from './platform.js'
import { publishingOperations } from './publishing.js'
import { sourceOperations } from './source.js'
import { deployOperations } from './deploys.js'
import { passwordOperations } from './passwords.js'
import { websiteOperations } from './websites.js'
import { functionOperations } from './functions.js'

/** Every API operation. REST routes, OpenAPI and the MCP tools are all derived from this list. */
export const operations: readonly AnyOperation[] = [
  ...meOperations,
  ...accountOperations,
  ...platformOperations,
  ...websiteOperations,
  ...passwordOperations,
  ...sourceOperations,
  ...deployOperations,
  ...functionOperations,
  ...codeOperations,
  ...publishingOperations,
  ...apiKeyOperations,
  ...auditLogOperations,
  ...memberOperations,
  ...transferOperations,
  ...billingOperations,
  ...anonymousOperations,
  ...formOperations,
  ...formNotificationOperations,
  ...storageOperations,
  ...storagePartOperations,
  ...shareOperations,
  ...assetOperations,
  ...cmsOperations,
  ...legacyPageOperations,
  ...blogOperations,
  ...domainOperations,
  ...namespaceOperations,
  ...analyticsOperations,
  ...analyticsShareOperations,
]
