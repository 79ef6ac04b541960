// A real Minecraft Java edition server for the end-to-end tests: npm
// minecraft-protocol's createServer answering the Server List Ping (and the
// legacy FE 01 ping) on 127.0.0.1.
//
//   node minecraft-server.js <port> <mode>
//
// mode "modern": a chat-component MOTD, max players 20, three players online
// in the sample, a favicon. mode "logins": the same, with the players who
// have logged in (minecraft-client.js) as online count and sample, as a
// vanilla server lists them. mode "legacy-only": the MOTD as a string, and
// the modern ping refused (the connection closed), as a server older than
// 1.7 would; the legacy ping is answered. mode "two-lines": "modern" with a
// MOTD of two lines.
// Prints "ready <port>" once listening.
const mc = require('minecraft-protocol')

const [port, mode] = [Number(process.argv[2]), process.argv[3] || 'modern']
const legacyOnly = mode === 'legacy-only'
const sample = [
  { name: 'alice', id: '4566e69f-c907-48ee-8d71-d7ba5aa00d20' },
  { name: 'bob', id: '00000000-0000-4000-8000-000000000002' },
  { name: 'carol', id: '00000000-0000-4000-8000-000000000003' }
]
const server = mc.createServer({
  host: '127.0.0.1',
  port,
  'online-mode': false,
  maxPlayers: 20,
  motd: 'Gate Craft',
  motdMsg: legacyOnly
    ? undefined
    : mode === 'two-lines'
      ? { text: 'Gate Craft\n', extra: [{ text: '\u00a77  second  line' }] }
      : { text: 'Gate ', extra: [{ text: '\u00a7aCraft', bold: true }] },
  favicon: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==',
  // The three-argument form: answering false closes the connection.
  beforePing: (response, client, answer) => {
    if (legacyOnly) return answer(null, false)
    if (mode === 'logins') {
      // players.online is minecraft-protocol's count of logins.
      response.players.sample = Object.values(server.clients)
        .filter((c) => c.state === mc.states.PLAY)
        .map((c) => ({ name: c.username, id: c.uuid }))
      return answer(null, response)
    }
    response.players.online = sample.length
    response.players.sample = sample
    answer(null, response)
  }
})
server.on('listening', () => console.log('ready ' + port))
server.on('error', (err) => { console.error(err); process.exit(1) })
