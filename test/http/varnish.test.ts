import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, rawRequest } from '../helpers/http.js'
import { createWebsite, startServer, tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * Debian's Varnish (7.1, with varnish-modules' xkey) in front of Plinth with deploy/varnish.vcl, its
 * backend's port replaced: published files are kept and purged by their website's key; pages and
 * drafts always reach Plinth.
 */

const VARNISHD = '/usr/sbin/varnishd'
const skip = !existsSync(VARNISHD) && process.env.CI !== 'true' ? 'needs Debian varnish and varnish-modules' : false

test(
  'Varnish in front: a published file is a hit the second time and gone within a second of a publish; pages and drafts always reach Plinth',
  { skip },
  async (t) => {
    const varnishPort = await freePort()
    const server = await startServer(t, { PLINTH_PURGE_URLS: `http://127.0.0.1:${varnishPort}/` })
    const dir = tempDir(t, 'plinth-varnish-')
    const vcl = readFileSync(join(process.cwd(), 'deploy', 'varnish.vcl'), 'utf8').replace(
      '.port = "8080";',
      `.port = "${server.plinth.port}";`,
    )
    assert.notEqual(vcl, readFileSync(join(process.cwd(), 'deploy', 'varnish.vcl'), 'utf8'), 'the one line to edit is there')
    writeFileSync(join(dir, 'plinth.vcl'), vcl)
    const varnish = spawn(
      VARNISHD,
      ['-F', '-j', 'none', '-n', join(dir, 'n'), '-a', `127.0.0.1:${varnishPort}`, '-f', join(dir, 'plinth.vcl'), '-s', 'malloc,32m'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
    let log = ''
    varnish.stderr.on('data', (chunk) => (log += chunk))
    t.after(() => new Promise<void>((r) => (varnish.exitCode !== null ? r() : (varnish.once('exit', () => r()), varnish.kill('SIGTERM')))))

    const site = await createWebsite(server, { name: 'Cached', kind: 'static', subdomain: 'cached' })
    const deploy = async (css: string) => {
      await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
        body: {
          files: [
            { path: 'index.html', content: '<link rel="stylesheet" href="/site.css"><h1>hi</h1>' },
            { path: 'site.css', content: css },
          ],
        },
      })
      assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
    }
    const through = (host: string, path: string) => rawRequest(varnishPort, host, path)
    await waitUntil(
      // A host no site has: nothing of the site's is asked for (or kept) before it is published.
      async () => (await through('varnish-probe.localhost', '/').catch(() => null)) !== null,
      'Varnish to answer',
      15_000,
      100,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${log.slice(-2000)}`)
    })
    await deploy('h1{color:red}')
    // The publish's purge reached Varnish before the file is first asked for (a purge arriving after
    // would drop the copy the next request should hit).
    const purges = server.plinth.registry.cachePurge
    await waitUntil(() => purges.settled, 'the publish’s purge to reach Varnish')
    assert.equal(purges.failed, 0)
    assert.equal((await through('cached.localhost', '/site.css')).status, 200)

    // Straight from Plinth: the keys and the shared-cache lifetime; browsers still revalidate.
    const direct = await rawRequest(server.plinth.port, 'cached.localhost', '/site.css')
    assert.deepEqual(
      [direct.headers['xkey'], direct.headers['surrogate-key'], direct.headers['cache-tag'], direct.headers['surrogate-control']],
      [site.id, site.id, site.id, 'max-age=31536000'],
    )
    assert.equal(direct.headers['cache-control'], 'public, max-age=0, must-revalidate')
    const draft = await rawRequest(server.plinth.port, 'draft--cached.localhost', '/site.css')
    assert.equal(draft.headers['surrogate-control'], undefined, 'a draft is never for a shared cache')

    // The second request of a published file is a hit; the key never leaves Varnish.
    const second = await through('cached.localhost', '/site.css')
    assert.deepEqual([second.headers['x-cache'], second.body.toString()], ['hit', 'h1{color:red}'])
    assert.equal(second.headers['xkey'], undefined)
    // Pages always reach Plinth (its beacon counts every view), and so do drafts.
    await through('cached.localhost', '/')
    assert.equal((await through('cached.localhost', '/')).headers['x-cache'], 'miss')
    await through('draft--cached.localhost', '/site.css')
    assert.equal((await through('draft--cached.localhost', '/site.css')).headers['x-cache'], 'miss')

    // A publish purges the website's key: within a second Varnish serves the new file.
    await deploy('h1{color:blue}')
    const published = Date.now()
    await waitUntil(
      async () => (await through('cached.localhost', '/site.css')).body.toString() === 'h1{color:blue}',
      'the new file through Varnish',
      1_000,
      20,
    )
    assert.ok(Date.now() - published <= 1_000)
    assert.equal(server.plinth.registry.cachePurge.failed, 0)
    // Unpublishing purges too: nothing of the site stays in the cache.
    await through('cached.localhost', '/site.css')
    assert.equal((await server.api('POST', `/v1/websites/${site.id}/unpublish`)).status, 200)
    await waitUntil(async () => (await through('cached.localhost', '/site.css')).status === 404, 'the unpublished file to go', 1_000, 20)
  },
)
