// minecraft-server-util as an independent client: prints its version and
// its answer for one server as JSON.
//
//   node minecraft-server-util-status.js <java|legacy|bedrock> <host> <port>
const util = require('minecraft-server-util')
const version = require('minecraft-server-util/package.json').version
const [kind, host, port] = [process.argv[2], process.argv[3], Number(process.argv[4])]
const call = { java: util.status, legacy: util.statusLegacy, bedrock: util.statusBedrock }[kind]
call(host, port, { timeout: 5000, enableSRV: false })
  // Bedrock's serverGUID is a BigInt, which JSON has no number for.
  .then((r) => { console.log(JSON.stringify({ version, result: r }, (_, v) => typeof v === 'bigint' ? v.toString() : v)) })
  .catch((err) => { console.error(err); process.exit(1) })
