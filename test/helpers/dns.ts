import type { TestContext } from 'node:test'
import dns2 from 'dns2'

/** Each TXT entry is one record: a string, or (over 255 bytes, as a DKIM key) its character-strings in order. */
export type Zone = Record<string, { TXT?: (string | string[])[]; CNAME?: string; A?: string[] }>

/** A real DNS server on a loopback UDP port, answering from `zone` (edited by the test as DNS would change). */
export async function dnsServer(t: TestContext): Promise<{ zone: Zone; address: string }> {
  const zone: Zone = {}
  const { Packet } = dns2
  const server = dns2.createServer({
    udp: true,
    handle: (request: any, send: any) => {
      const response: any = Packet.createResponseFromRequest(request)
      const [question] = request.questions
      const entry = zone[question.name.toLowerCase()]
      if (entry !== undefined) {
        if (question.type === Packet.TYPE.TXT)
          for (const data of entry.TXT ?? [])
            response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data })
        if (question.type === Packet.TYPE.CNAME && entry.CNAME !== undefined)
          response.answers.push({ name: question.name, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 1, domain: entry.CNAME })
        if (question.type === Packet.TYPE.A)
          for (const address of entry.A ?? [])
            response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 1, address })
      } else response.header.rcode = 3 // NXDOMAIN
      send(response)
    },
  })
  const listening = await server.listen({ udp: { port: 0, address: '127.0.0.1' } })
  const port = (listening as any).udp.port as number
  t.after(() => server.close())
  return { zone, address: `127.0.0.1:${port}` }
}
