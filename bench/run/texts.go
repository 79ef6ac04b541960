package main

import "github.com/gamegate/gamegate/bench/internal/httpload"

// What each workload measures, for the page.
// qosRateShare is the share of the bare loop's throughput the qos-rate
// workload offers every target.
const qosRateShare = 0.5

const (
	// baselinesText follows the summary.
	baselinesText = `Baselines outside Go run in processes of their own, their CPU time read from /proc: the
**C server** (` + "`bench/internal/cserver/c/echo.c`" + `, built with ` + "`cc -O2 -pthread`" + `: one thread per
SO_REUSEPORT socket, recvmmsg/sendmmsg batches of 32; QoS answered byte for byte as gamegate
answers, A2S by echo) with 1 thread and with one per CPU; **coturn** (Debian's ` + "`turnserver`" + `,
relay threads = CPUs, no TLS, users from its configuration file, the configuration under [Relay forwarding](#relay-forwarding))
and **pion/turn**'s server (` + "`bench/turn`" + `, one socket per CPU), both relaying ChannelData between
TURN allocations. Versions and configurations are in each workload's section.`
	qosAbout = `QoS echo (Unity's layout) on the gamegate app and on a caddy-l4 route, against a bare Go
echo loop (one reader, ReadFrom, WriteTo), caddy-l4's own ` + "`echo`" + ` and a C server, the practical
limit (` + "`bench/internal/cserver/c/echo.c`" + `, built with ` + "`cc -O2`" + `: one thread per SO_REUSEPORT socket,
recvmmsg/sendmmsg batches of 32, the answer gamegate's QoS echo gives a source it lets through, byte
for byte), with 1 thread and with one per CPU: 8 client sockets, each
keeping 16 requests in flight (a closed loop). The clients run in a process of their own, all
their sockets on one thread waiting in epoll_wait, so that they do not share the servers' Go
scheduler and keep up with the fastest server. Responses per
second, the round-trip time of every response, the servers' process's CPU time per response, and
where the requests wait: the mean number of datagrams queued in the server's sockets and in the
clients' (sampled every millisecond); the C server's CPU time is read from /proc. Goals: throughput
at least the bare loop's, and 0.9× the C server with as many threads as the app has readers. In a closed loop
the round-trip times follow from the throughput (128 requests always outstanding) and from which
side of the loop the CPUs are given to, so latency is compared at a fixed rate, below.`
	qosRateAbout = `The same paths and clients at a fixed rate: the 8 client sockets send %d requests a second
in all, whatever the answers do (an open loop), half of what the bare loop answered under the load
above in this run, so that every target is compared at the same offered load. The figure
compared is the round-trip time's p99 in each round: the bare loop's over the target's (above 1:
the target's is lower). A request lost is not in a p99: a server whose socket buffer overflows
during a stall (the bare loop's is the kernel's default) drops requests that would have waited
longest. Goal: the gamegate app's p99 no worse than the bare loop's.`
	qosOneAbout = `The same paths with one client keeping one request in flight: how game clients use QoS
(one ping at a time), where the cost of each wakeup and system call shows. Here the client is
a goroutine in the servers' process: no P stays busy with one request in flight, and client and
reader hand one thread to each other, so the figure is the paths' own cost, without cross-CPU
wakeups (whose cost on a virtual machine varies by a factor of two from round to round). Goal:
0.95× the bare loop with the default readers.`
	relayAbout = `Messages forwarded per second between two loopback clients (138-byte datagrams, 64 in
flight, each answered straight back): gamegate's relay on the gamegate app (RELAY messages
between bound, connected allocations) and on a caddy-l4 route, against a bare Go forwarder and
caddy-l4's UDP ` + "`proxy`" + ` carrying datagrams of the same size, and against the TURN relays
studios deploy, each in a process of its own: **coturn** (Debian's ` + "`turnserver`" + `) and
**pion/turn**'s server, with the clients' messages as ChannelData of the same size after
Allocate, CreatePermission and ChannelBind (long-term credentials), the way WebRTC and game
clients use TURN. Two topologies for them: both clients allocated (every message passes two
allocations inside the server: the game topology, both players behind the relay), and one
client allocated with a plain UDP socket as its peer (one hop per message, as in gamegate's
relay, which forwards each message from one bound allocation to the other once). The clients
run in a process of their own (bench/turn's load generator on pion/turn's client for the TURN
relays), so each server's process's CPU time (read from /proc for those outside this one) is
its own: CPU per message is compared as well as messages/s. Goals: at least the bare forwarder,
caddy-l4's proxy, coturn and pion/turn with both clients allocated, and hop for hop at least
coturn's one-hop messages/s at no more CPU per message.`
	a2sAbout = `Cached A2S_INFO answers per second from gamegate's A2S shield, in front of a real A2S game
server (the canned one of the tests, which wants a challenge for A2S_INFO too). The clients
query as real ones do: A2S_INFO, the shield's S2C_CHALLENGE, A2S_INFO again with it, the
answer; 8 client sockets, 8 queries in flight each, all from 127.0.0.1 (the shield's
per-source limits set out of the way). The baseline is the bare Go echo loop with the same
client, whose echo of each request plays the answer's part: two round trips per answer on
both sides. The C server (the QoS workload's, one thread per CPU) echoes in the same way rather
than answering A2S_INFO with a fixed reply: a baseline must not answer an unproven source with more
bytes than it sent, and an echo (one datagram in, one out, no state) is the floor of any answer from a
cache. Goals: 0.9× the bare loop and 0.9× the C server. The game server is asked once per ttl
(checked).`
	dgramAbout = `Package dgram's own benchmarks (` + "`go test -bench '^BenchmarkEcho(OneInFlight)?$' ./dgram`" + `): the
gamegate app's UDP server (readers, batches, sockets) serving a bare echo protocol, against a
bare Go echo loop, with a window of 16 datagrams in flight per client (Echo) and with one
(EchoOneInFlight). The gap between these and the QoS figures is the QoS protocol's own cost.`
)

// httpText gives the HTTP workloads' titles and descriptions.
var httpText = map[string][2]string{
	httpload.Discovery: {"Discovery", `qos_discovery's answers (a fleet's servers as JSON, with its ETag)
against Caddy's ` + "`file_server`" + ` serving the same body from a file, same Caddy, same client: 32
keep-alive connections, one request at a time each, from a process of their own. 200: the body; 304: ` + "`If-None-Match`" + `
with the current ETag.`},
	httpload.GameQuery: {"Cached game query", `game_query answering from its cache: a GQP command (` + "`bench/identify`" + `, from a
GQP server on the gamegate app) and an A2S server's normalised status (` + "`cs2`" + `, through the A2S
shield from the canned A2S server), against qos_discovery's 200 for a fleet of two in the same
Caddy, same client and connections. The handlers are compared routed alike: each the whole of a
site of its own, and each behind a ` + "`handle_path`" + ` of the same site (game_query at ` + "`/query/*`" + ` as its
docs mount it). Goal: 0.95× discovery routed alike. Also reported: game_query behind its
` + "`handle_path`" + ` against discovery as its docs mount it (the site's last route, after the
` + "`handle_path`" + ` routes), and what each route costs discovery against a site of its own.`},
	httpload.ServerList: {"Server list", `server_list's answer (` + "`GET /servers/`" + `): every game server registered
with the gamegate app's master, each with its status from the list's cache, as JSON, against
qos_discovery's 200 (a fleet of eight) in the same Caddy, same client and connections, each
routed alike (as the game-query workload compares them): behind a ` + "`handle_path`" + ` of the same
site, and each the whole of a site of its own. The game servers are real sockets that register
as Quake 3 servers do (heartbeat, getinfo, infoResponse) and answer getstatus. The list holds
each answer encoded until a registration or a status changes, and gzipped once (the gzip row is
a client sending ` + "`Accept-Encoding: gzip`" + `, as browsers do). Goal: 0.8× discovery. Also
reported: the list against discovery as its docs mount it (the site's last route, after the
` + "`handle_path`" + ` routes); Caddy's ` + "`file_server`" + ` serving the very bytes of the list's answer
(a site of its own); and a bare ` + "`net/http`" + ` server answering the list's bytes and discovery's
from memory, each with the list's headers, what that many bytes cost any Go HTTP server without
Caddy.`},
}
