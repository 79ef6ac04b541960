// Minecraft Java edition clients that log in to a server and stay: npm
// minecraft-protocol's createClient in offline mode, one per user name.
// Prints "ready" once every client has reached the play state.
//
//   node minecraft-client.js <host> <port> <username>...
const mc = require('minecraft-protocol')

const [host, port, ...names] = [process.argv[2], Number(process.argv[3]), ...process.argv.slice(4)]
let playing = 0
for (const username of names) {
  const client = mc.createClient({ host, port, username, auth: 'offline' })
  client.on('state', (state) => {
    if (state === mc.states.PLAY && ++playing === names.length) console.log('ready ' + playing)
  })
  client.on('error', (err) => { console.error(username, err); process.exit(1) })
  client.on('end', (reason) => { console.error(username, 'disconnected:', reason); process.exit(1) })
}
