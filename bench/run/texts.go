package main

import "github.com/gamegate/gamegate/bench/internal/httpload"

// What each workload measures, for the page.
const (
	qosAbout = `QoS echo (Unity's layout) on the gamegate app and on a caddy-l4 route, against a bare Go
echo loop (one reader, ReadFrom, WriteTo) and caddy-l4's own ` + "`echo`" + `: 8 client sockets, each
keeping 16 requests in flight. Responses per second, and the round-trip time of every
response. The goals: throughput at least the bare loop's, p99 no worse than its.`
	qosOneAbout = `The same paths with one client keeping one request in flight: how game clients use QoS
(one ping at a time), where the cost of each wakeup and system call shows. Goal: 0.95× the
bare loop with the default readers.`
	relayAbout = `Messages forwarded per second between two loopback clients (138-byte datagrams, 64 in
flight, each answered straight back): gamegate's relay on the gamegate app (RELAY messages
between bound, connected allocations) and on a caddy-l4 route, against a bare Go forwarder and
caddy-l4's UDP ` + "`proxy`" + ` carrying datagrams of the same size. Goal: at least both baselines.`
	a2sAbout = `Cached A2S_INFO answers per second from gamegate's A2S shield, in front of a real A2S game
server (the canned one of the tests, which wants a challenge for A2S_INFO too). The clients
query as real ones do: A2S_INFO, the shield's S2C_CHALLENGE, A2S_INFO again with it, the
answer; 8 client sockets, 8 queries in flight each, all from 127.0.0.1 (the shield's
per-source limits set out of the way). The baseline is the bare Go echo loop with the same
client, whose echo of each request plays the answer's part: two round trips per answer on
both sides. Goal: 0.9× the bare loop. The game server is asked once per ttl (checked).`
	dgramAbout = `Package dgram's own benchmarks (` + "`go test -bench '^BenchmarkEcho(OneInFlight)?$' ./dgram`" + `): the
gamegate app's UDP server (readers, batches, sockets) serving a bare echo protocol, against a
bare Go echo loop, with a window of 16 datagrams in flight per client (Echo) and with one
(EchoOneInFlight). The gap between these and the QoS figures is the QoS protocol's own cost.`
)

// httpText gives the HTTP workloads' titles and descriptions.
var httpText = map[string][2]string{
	httpload.Discovery: {"Discovery", `qos_discovery's answers (a fleet's servers as JSON, with its ETag)
against Caddy's ` + "`file_server`" + ` serving the same body from a file, same Caddy, same client: 32
keep-alive connections, one request at a time each. 200: the body; 304: ` + "`If-None-Match`" + `
with the current ETag.`},
	httpload.GameQuery: {"Cached game query", `game_query answering from its cache, behind ` + "`handle_path /query/*`" + `
as its docs mount it: a GQP command (` + "`/query/bench/identify`" + `, from a GQP server on the
gamegate app) and an A2S server's normalised status (` + "`/query/cs2`" + `, through the A2S shield
from the canned A2S server), against qos_discovery's 200 for a fleet of two in the same Caddy,
same client and connections, mounted as its docs do (at the site's top) and, to tell the
handler's cost from the route's, behind a ` + "`handle_path`" + ` like game_query's. Goal: 0.95× discovery.`},
	httpload.ServerList: {"Server list", `server_list's answer (` + "`GET /servers/`" + `, behind ` + "`handle_path /servers/*`" + `):
every game server registered with the gamegate app's master, each with its status from the
list's cache, as JSON, against qos_discovery's 200 (a fleet of eight) in the same Caddy, same
client and connections. The game servers are real sockets that register as Quake 3 servers do
(heartbeat, getinfo, infoResponse) and answer getstatus.`},
}
