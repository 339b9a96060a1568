// The configuration table: each environment variable Plinth reads, its default and its meaning (the README's table).

/** One row of the README's configuration table. */
export interface ConfigVariable {
  name: string
  default: string
  meaning: string
}

export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  { name: 'PORT', default: '8080', meaning: 'listen port' },
  { name: 'HOST', default: '127.0.0.1', meaning: 'listen address' },
  { name: 'PLINTH_DATA_DIR', default: './data', meaning: 'everything Plinth stores' },
  { name: 'PLINTH_SITE_DOMAIN', default: 'localhost', meaning: 'sites live at `{sub}.{domain}` and `draft--{sub}.{domain}`' },
  {
    name: 'PLINTH_API_ORIGIN',
    default: 'http://localhost:{PORT}',
    meaning:
      'origin used in every URL the API returns; plain `http://` on a host that shares a parent domain with `PLINTH_SITE_DOMAIN` is refused at start-up (see "Sites on their own domain"); in a cluster, required and the same on every node (the address in front of them: the first node that leads records it, and a node giving another is refused at start)',
  },
  {
    name: 'PLINTH_ADMIN_KEY',
    default: 'none',
    meaning: 'on the first start of an empty data directory, the secret of the first admin key (must start with `wb_`)',
  },
  {
    name: 'PLINTH_SECRET_FILE',
    default: '`installation.key` in the data directory',
    meaning:
      'the installation\'s secret (64 hex digits): every key Plinth signs with derives from it (deploy tickets, upload tokens, webhook secrets, share links, site-password cookies, backup manifests, a cluster\'s log). Made on the first start where it is absent (0600). Backups never hold it: keep a copy apart, a restore needs it (see "Backups and restores"). Required in a cluster, the same file on every node',
  },
  {
    name: 'PLINTH_CACHE_BYTES',
    default: '256MiB',
    meaning:
      'served content kept in memory (bodies and their gzip and brotli variants, least recently used out first); colder content is read from the database on request. A number of bytes, or with a unit: `512MiB`, `2GiB`',
  },
  {
    name: 'PLINTH_SERVE_THREADS',
    default: 'the number of cores',
    meaning:
      'threads serving sites on the port, the main thread included: each answers site files from its own share of `PLINTH_CACHE_BYTES` and hands everything else (the API, MCP, the dashboard, forms, passwords) to the main thread. A publish, rollback, unpublish, domain or password change is on every thread before the API answers. Every thread is on the port before anything is answered; a thread that cannot listen there stops the start with an error naming it. `1`: the main thread alone',
  },
  {
    name: 'PLINTH_CLUSTER_NATS',
    default: 'none',
    meaning:
      'comma-separated NATS servers (JetStream on; `host:port`, or `tls://host:port` for TLS): this process is then one node of a cluster (see "Several nodes"); unset: the embedded single server. A server not on this machine is refused without both TLS and credentials; credentials never go in the address (`user:password@` is refused)',
  },
  {
    name: 'PLINTH_CLUSTER_NATS_CREDS',
    default: 'none',
    meaning:
      "in a cluster, a file holding this node's NATS credentials: an nkey seed (`plinth nats-key FILE` makes one), a `.creds` file (a user JWT and its seed), or `user:password` on one line",
  },
  {
    name: 'PLINTH_CLUSTER_NATS_CA',
    default: 'none',
    meaning:
      "in a cluster, the CA certificate (PEM) that signed the NATS servers' certificates (`deploy/cluster/make-certs.sh`): TLS towards NATS, each server's certificate checked against it and against the address `PLINTH_CLUSTER_NATS` gives",
  },
  {
    name: 'PLINTH_NODE_NAME',
    default: 'none',
    meaning: "in a cluster, this node's name, unique among the nodes (lowercase letters, digits, `-`)",
  },
  {
    name: 'PLINTH_NODE_URL',
    default: 'none',
    meaning:
      "in a cluster, the origin the other nodes reach this node's port at (`http://10.0.0.2:8080`): kept in the lease while this node leads, so the others know where the primary is",
  },
  {
    name: 'PLINTH_CLUSTER_LEASE_MS',
    default: '5000',
    meaning:
      "in a cluster, the primary's lease: renewed every third of it; a primary that stops renewing is replaced after at most this long",
  },
  {
    name: 'PLINTH_BACKUP_ARCHIVE',
    default: 'none',
    meaning:
      "a backup root (outside the data directory; another disk, ideally) the server appends every commit's writes to within a second, encrypted and authenticated with a key derived from the installation's secret, with the blob files they name; the server takes a base backup there when the archive begins, and `plinth restore ROOT --at TIME` (or `--position N`) restores the newest base before that point and replays the archive up to it (see \"Continuous archive and point-in-time restore\"). On a cluster, set it on the node that is to archive (a replica, sparing the primary): it archives the log's entries as it applies them, and its own while it leads",
  },
  {
    name: 'PLINTH_CLUSTER_BACKUPS',
    default: 'none',
    meaning:
      "in a cluster, a backup root this node can read (`plinth backup ROOT` taken from any node, on storage every node mounts or syncs): a node that is new, behind the log's first entry, or whose data directory holds writes the cluster never acknowledged restores the newest backup there (the old data moved aside, never deleted) and replays the log from the backup's position; unset: a new node replays the whole log, and a diverged one refuses to start",
  },
  {
    name: 'PLINTH_PURGE_URLS',
    default: 'none',
    meaning:
      "comma-separated URLs of cache nodes in front (Varnish with `deploy/varnish.vcl`): published files then carry their website's surrogate key and may be kept there, and a publish, rollback, unpublish, suspension, deletion, domain or password change sends each node a `PURGE` for that key (retried; never holds up the API)",
  },
  {
    name: 'PLINTH_DOMAIN_CONNECT_TEMPLATE',
    default: 'none',
    meaning:
      "a Domain Connect template of yours (`providerId/serviceId`, as published in the templates repository; with `_KEY` and `_KEY_HOST`): connect_domain then answers a signed link that applies a domain's records at its DNS provider in one approval. Without it, connect_domain names the provider and its control panel, and the records to create",
  },
  {
    name: 'PLINTH_DOMAIN_CONNECT_KEY',
    default: 'none',
    meaning: 'the PEM private key file the Domain Connect apply link is signed with (RSA)',
  },
  {
    name: 'PLINTH_DOMAIN_CONNECT_KEY_HOST',
    default: 'none',
    meaning:
      "the host under your template's provider domain where providers read the key's public half (the link's `key`, such as `_dck1`)",
  },
  {
    name: 'PLINTH_NAMESPACE_RENAMES',
    default: '5',
    meaning:
      "how many times a workspace may rename its namespace, and each site its vanity label, with billing off (with billing on: the plan's, Base 1 and Max 5; the free plan has no namespace)",
  },
  {
    name: 'PLINTH_WARM_SITES',
    default: '20',
    meaning:
      'framework sites whose warm build state is kept (typecheck programs and esbuild contexts, about 9 MiB each); the least recently checked beyond it start cold on their next check (100-200 ms more for a small site; see `npm run bench:warm`)',
  },
  {
    name: 'PLINTH_APP_URL',
    default: '{PLINTH_API_ORIGIN}/app',
    meaning:
      "the dashboard (`{app_url}`): sign-in, OAuth consent, invitations, owner setup; Plinth serves it under this URL's path, which must not be `/`",
  },
  {
    name: 'PLINTH_BILLING',
    default: 'off',
    meaning: '`on` gives every organization a plan (`free`, `base`, `max`) with website slots; `off`: no plans, unlimited websites',
  },
  { name: 'PLINTH_PLAN_WEBSITES', default: 'free=1,base=5,max=25', meaning: 'website slots of each plan when billing is on' },
  {
    name: 'PLINTH_FREE_STORAGE_BYTES',
    default: '1GB',
    meaning:
      'shared-file storage of the free plan when billing is on (402 `storage_limit` past it; paid plans have none); a number or with a unit: `500MB`, `2GiB`',
  },
  {
    name: 'PLINTH_STRIPE_SECRET_KEY',
    default: 'none',
    meaning:
      "Stripe secret key for `/v1/billing/checkout`, `portal` and `sync` and the dashboard's billing page (without it they answer 409 `billing_not_configured`)",
  },
  { name: 'PLINTH_STRIPE_PRICE_BASE', default: 'none', meaning: 'Stripe price id of the Base plan (and `PLINTH_STRIPE_PRICE_MAX` of Max)' },
  {
    name: 'PLINTH_ANONYMOUS',
    default: 'open',
    meaning:
      "anonymous publishing (`/public/v1/anonymous/…`): `open`; `invite_only` (issuing a credential needs an operator's invite code in `X-Invite-Code`, from `plinth anonymous-invite`; 503 `invite_only` otherwise); `off` (404)",
  },
  {
    name: 'PLINTH_TRUSTED_PROXIES',
    default: 'none',
    meaning:
      "comma-separated addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` names the client (the first hop from the right that is not one of them); without it the client is the socket's peer",
  },
  {
    name: 'PLINTH_METRICS_ALLOW',
    default: 'none',
    meaning:
      'comma-separated addresses or CIDR ranges that may read `GET /metrics` (Prometheus) without a key; anyone else needs an admin API key of the installation',
  },
  {
    name: 'PLINTH_OUTBOUND_ALLOW',
    default: 'none',
    meaning:
      'comma-separated addresses or CIDR ranges that requests made for users (form webhooks) may reach although they are loopback, private, link-local or otherwise refused by the SSRF guard',
  },
  {
    name: 'PLINTH_SMTP_URL',
    default: 'none (mail is held in the outbox for the operator: `plinth mail show`)',
    meaning:
      'the relay outgoing mail is handed to: `smtp://user:password@host:587` (STARTTLS required; `?starttls=optional`, or `?starttls=off` for a relay on this machine) or `smtps://user:password@host:465`. The password is never logged or shown (see "Email")',
  },
  {
    name: 'PLINTH_SMTP_CA_FILE',
    default: "the system's CAs",
    meaning: "a PEM file of the CA the relay's certificate must chain to (a relay with a private CA)",
  },
  {
    name: 'PLINTH_MAIL_FROM',
    default: '`Plinth <no-reply@{dashboard host}>`',
    meaning: 'the From of every message: an address, or a name and an address',
  },
  {
    name: 'PLINTH_DKIM_DOMAIN, PLINTH_DKIM_SELECTOR, PLINTH_DKIM_KEY_FILE',
    default: 'none',
    meaning:
      "DKIM-sign every message (all three together): the signing domain, the selector of its DNS record, and the private key's PEM file",
  },
  {
    name: 'PLINTH_MAIL_LIMITS',
    default: '`address=10/h,50/d;organization=200/h,1000/d`',
    meaning:
      'the most messages one address, and one workspace, are sent an hour and a day; past them a request that would send mail is refused with `mail_limit` (a password reset says nothing, as ever)',
  },
  {
    name: 'PLINTH_DOMAIN_TARGET',
    default: 'none',
    meaning:
      "the name custom domains point a CNAME at (your proxy's); without it and without `PLINTH_DOMAIN_ADDRESSES` only the TXT ownership record is checked",
  },
  {
    name: 'PLINTH_DOMAIN_ADDRESSES',
    default: 'none',
    meaning: "comma-separated IPv4/IPv6 addresses an apex custom domain's A/AAAA records must point at",
  },
  {
    name: 'PLINTH_DNS_SERVERS',
    default: "the system's",
    meaning:
      'comma-separated DNS servers (`ip` or `ip:port`) that custom-domain verification and requests made for users (webhooks, URL imports, through the SSRF guard) ask',
  },
  {
    name: 'PLINTH_ANALYTICS_BEACON',
    default: 'on',
    meaning:
      '`on`: the edge beacon counts every published HTML page view (no drafts, bots or 304s) for `GET /v1/websites/{id}/analytics`; `off`: nothing is counted',
  },
  {
    name: 'PLINTH_COUNTRY_HEADER',
    default: 'none',
    meaning:
      "a header your proxy or CDN sets to the visitor's two-letter country (e.g. `CF-IPCountry`); without it countries are `unknown`",
  },
  {
    name: 'PLINTH_REGION_HEADER',
    default: 'none',
    meaning:
      "a header your proxy or CDN sets to the visitor's region (e.g. `CF-Region`) for the tracker's `region` dimension; without it regions are `unknown`",
  },
  {
    name: 'PLINTH_CITY_HEADER',
    default: 'none',
    meaning:
      "a header your proxy or CDN sets to the visitor's city (e.g. `CF-IPCity`) for the tracker's `city` dimension; without it cities are `unknown`",
  },
  {
    name: 'PLINTH_ANALYTICS_RETENTION_DAYS',
    default: '90',
    meaning:
      'days the tracker keeps raw events (combined filters, segments, cohorts and unit=minute read them) and the beacon its per-minute counts; hourly and daily rollups are kept for good',
  },
  {
    name: 'PLINTH_IMAGE_VARIANTS_PER_SITE',
    default: '1000',
    meaning:
      "distinct resized variants (size, fit, format, quality) a website's images may have; past it requested widths round up to a fixed ladder (64 … 4096) and qualities to 50, 75 or 90",
  },
  {
    name: 'PLINTH_FORM_FILES_BYTES',
    default: '1GiB',
    meaning:
      'bytes of form-submission files each website keeps (further submissions with files answer 413 until old ones are deleted); a number or with a unit: `500MiB`',
  },
  {
    name: 'PLINTH_FUNCTION_CPU_MS',
    default: '50',
    meaning:
      "CPU time one request of a site's functions may use (its isolate's CPU while the request is in flight); over it the isolate is stopped and the visitor gets a 503, the author a log line naming the limit",
  },
  {
    name: 'PLINTH_FUNCTION_WALL_MS',
    default: '30000',
    meaning: "how long one request of a site's functions may take in all (fetches and timers included); past it the visitor gets a 504",
  },
  {
    name: 'PLINTH_FUNCTION_MEMORY_MB',
    default: '128',
    meaning: "heap of each site's functions isolate; past it the isolate is stopped (503) and started again on the next request",
  },
  {
    name: 'PLINTH_FUNCTION_BODY_BYTES',
    default: '10MiB',
    meaning: "request body a site's functions read at most (a larger one is answered 413 before any code runs)",
  },
  {
    name: 'PLINTH_FUNCTION_SUBREQUESTS',
    default: '50',
    meaning:
      "outgoing fetches one request of a site's functions may make (each through the SSRF guard); the next one fails inside the function",
  },
  { name: 'PLINTH_STRIPE_API_URL', default: 'https://api.stripe.com', meaning: "Stripe's API address (a local stand-in in tests)" },
]
