// A real Minecraft Bedrock server's RakNet side: npm bedrock-protocol's
// server on its JavaScript RakNet backend (jsp-raknet), answering unconnected
// pings with its own advertisement. Prints "ready" once listening.
//
//   node bedrock-server.js <port> <motd> <level name> <online> <max>
//
// bedrock-protocol's index.js loads raknet-native, whose native binary is
// not installed here (see .npmrc), so the server class is loaded directly.
const { Server } = require('bedrock-protocol/src/server')
const [port, motd, levelName, online, max] = process.argv.slice(2)
const server = new Server({
  host: '127.0.0.1',
  port: Number(port),
  raknetBackend: 'jsp-raknet',
  offline: true,
  motd: { motd, levelName },
  maxPlayers: Number(max),
  // No client can log in here; the advertisement reports players as a
  // server with that many would.
  advertisementFn: () => Object.assign(server.advertisement, { playersOnline: Number(online) })
})
server.listen().then(
  () => console.log('ready', require('bedrock-protocol/package.json').version),
  (err) => { console.error(err); process.exit(1) })
