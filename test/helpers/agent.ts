/** What an agent does over plain fetch: one MCP tool call, and the skill helper's ticket deploy. */
import type { TestServer } from './server.js'

/** One MCP tool call as JSON-RPC over plain fetch; the tool's structured result, or its error body. */
export async function tool(s: TestServer, name: string, args: Record<string, unknown>, key = s.adminKey): Promise<any> {
  const response = await fetch(`${s.origin}/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  })
  const { result } = (await response.json()) as any
  return result.structuredContent
}

/** The helper's ticket deploy: one "files" part per file, the path without its leading slash as the filename, no type. */
export async function ticketDeploy(s: TestServer, ticket: string, files: Record<string, string>, fields: Record<string, string> = {}) {
  const form = new FormData()
  for (const [path, content] of Object.entries(files)) form.append('files', new Blob([content]), path.slice(1))
  for (const [name, value] of Object.entries(fields)) form.append(name, value)
  const response = await fetch(`${s.origin}/public/v1/deploys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ticket}` },
    body: form,
  })
  return { status: response.status, body: (await response.json()) as any }
}
