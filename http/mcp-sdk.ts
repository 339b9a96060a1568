// The parts of the MCP SDK the endpoint runs, in one module http/mcp.ts loads at its first request.
export { Server } from '@modelcontextprotocol/sdk/server/index.js'
export { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
export { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
