import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { keyedCall } from './http.js'

/**
 * A ticket deploy of a spawned server (begin_deploy's flow): `index.html` from `html`, and `big` (over
 * 1 MiB, so it goes to the blob directory) at `/media/big.bin`, sent on its own. Resolves when deployed.
 */
export async function ticketDeployLarge(port: number, key: string, websiteId: string, html: string, big: Buffer): Promise<void> {
  const sha256 = createHash('sha256').update(big).digest('hex')
  const ticket = (await keyedCall(port, key, 'POST', `/v1/websites/${websiteId}/deploy/tickets`)).body.ticket
  const uploads = await fetch(`http://127.0.0.1:${port}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
    body: JSON.stringify({ files: [{ path: '/media/big.bin', size: big.length, sha256 }] }),
  })
  const answered = (await uploads.json()) as any
  const target = answered.files[0].upload
  assert.equal(
    (await fetch(target.url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${port}`), { method: 'PUT', headers: target.headers, body: big }))
      .status,
    200,
  )
  const form = new FormData()
  form.append('files', new Blob([html]), 'index.html')
  form.append('uploaded', JSON.stringify([{ path: '/media/big.bin', size: big.length, sha256 }]))
  const deployed = await fetch(`http://127.0.0.1:${port}/public/v1/deploys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${answered.ticket}` },
    body: form,
  })
  assert.equal(deployed.status, 201, await deployed.text())
}

/** Begin, PUT, finalize: the shared files as finalize answers them. */
export async function shareFiles(port: number, key: string, websiteId: string, files: { name: string; bytes: Buffer }[]) {
  const begun = await keyedCall(port, key, 'POST', `/v1/websites/${websiteId}/objects/uploads`, {
    files: files.map((f) => ({ name: f.name, byteSize: f.bytes.length })),
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  for (const [i, file] of begun.body.files.entries()) {
    const put = await fetch(file.upload.url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${port}`), {
      method: 'PUT',
      headers: file.upload.headers,
      body: files[i]!.bytes,
    })
    assert.equal(put.status, 200, await put.text())
  }
  const done = await keyedCall(port, key, 'POST', `/v1/websites/${websiteId}/objects/finalize`, {
    ids: begun.body.files.map((u: any) => u.id),
  })
  assert.equal(done.status, 200, JSON.stringify(done.body))
  return done.body.files as { objectId: string; url: string }[]
}
