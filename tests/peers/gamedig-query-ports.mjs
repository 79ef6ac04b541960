// Prints, for every game of the installed GameDig, the ports its query
// runner tries, in order, for a server given without a port, at the
// game's default game port, and at another port: GameDig's own rules
// (lib/QueryRunner.js), read by running the runner with attempts that
// record their port and fail, so nothing is sent.
//
//	node gamedig-query-ports.mjs
//
// prints {"<id>": {"none": [...], "default": [...], "other": [...]}}; "other"
// is the default game port plus 100 (or 20000 for a game without one).
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { games } from 'gamedig'

const here = path.dirname(fileURLToPath(import.meta.url))
const lib = path.join(here, 'node_modules', 'gamedig', 'lib')
// QueryRunner is not among the package's exports: load its file.
const { default: QueryRunner } = await import(path.join(lib, 'QueryRunner.js'))

class Recorder extends QueryRunner {
  async _attempt (options) {
    this.ports.push(options.port ?? 0)
    throw new Error('recorded')
  }
}

const attempts = async (type, port) => {
  const r = new Recorder()
  r.ports = []
  const opts = { type, address: '192.0.2.1', portCache: false }
  if (port) opts.port = port
  try { await r.run(opts) } catch (e) {}
  return r.ports
}

const out = {}
for (const id of Object.keys(games)) {
  const o = games[id].options
  out[id] = {
    none: await attempts(id, 0),
    default: o.port ? await attempts(id, o.port) : [],
    other: await attempts(id, o.port ? o.port + 100 : 20000)
  }
}
process.stdout.write(JSON.stringify(out) + '\n')
