#!/usr/bin/env bash
# Game-query benchmark, everything on loopback, all figures from one run:
#   1. requests/s of game_query answering from its cache (a fresh hit)
#      against qos_discovery's 200 path, same wrk client and concurrency,
#      reported as a ratio;
#      and of an A2S status (gamegate.query.a2s, asking a2s_shield, which
#      asks a small A2S game server in Python) answered from the cache;
#   2. upstream GQP datagrams per 10 000 HTTP requests at a 1 s TTL, from
#      the gateway's own counters, with wrk hammering one server and command.
#
#	bench/gamequery.sh [duration] [rounds]     (defaults: 10s, 2)
#
# Installs wrk from Debian's packages when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
duration=${1:-10s}
rounds=${2:-2}
threads=${WRK_THREADS:-2}
conns=${WRK_CONNECTIONS:-32}
ensure_wrk

work=$(mktemp -d)
trap 'kill "${pid:-}" "${a2spid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/gamegate" ./cmd/gamegate
hport=$(free_port tcp)
gport=$(free_port udp)
sport=$(free_port udp)
a2sport=$(free_port udp)
aport=$(free_port tcp)
cat >"$work/Caddyfile" <<CADDY
{
	admin 127.0.0.1:$aport
	default_bind 127.0.0.1
	layer4 {
		udp/127.0.0.1:$gport {
			route {
				gqp {
					identify benchgame 1.0 1
				}
			}
		}
		udp/127.0.0.1:$sport {
			route {
				a2s_shield 127.0.0.1:$a2sport {
					ttl 1m
				}
			}
		}
	}
}
http://:$hport {
	qos_discovery {
		fleet bench-fleet {
			server 4f7d1d1a-a565-40b4-955a-ff0257d7ed3b 123 192.0.2.1:9000
			server 22bf10c2-2565-4e75-848f-d2df25210896 456 198.51.100.1:9000
		}
	}
	handle_path /query/* {
		game_query {
			server bench 127.0.0.1:$gport
			server cs2 127.0.0.1:$sport a2s
			ttl status 1m
			ttl identify 1m
			ttl echo 1s
			upstream_rate 1000
		}
	}
}
CADDY
# A minimal A2S game server: a challenge for every request without the
# right one, then a fixed A2S_INFO or A2S_PLAYER answer.
python3 - "$a2sport" <<'PY' &
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
ch = b"\x4d\x3c\x5b\x2a"
info = b"\xff\xff\xff\xffI\x11bench\x00de_dust2\x00csgo\x00Counter-Strike 2\x00" + struct.pack("<H", 730) + b"\x02\x10\x00dl\x00\x011.0\x00"
players = b"\xff\xff\xff\xffD\x02\x00alice\x00" + struct.pack("<if", 3, 60.0) + b"\x01bob\x00" + struct.pack("<if", 1, 30.0)
while True:
    d, a = s.recvfrom(2048)
    if d[4:5] == b"T" and d[-4:] == ch:
        s.sendto(info, a)
    elif d[4:5] == b"U" and d[5:9] == ch:
        s.sendto(players, a)
    elif d[4:5] in (b"T", b"U", b"V"):
        s.sendto(b"\xff\xff\xff\xffA" + ch, a)
PY
a2spid=$!
"$work/gamegate" run --config "$work/Caddyfile" >"$work/caddy.log" 2>&1 &
pid=$!
disc="http://127.0.0.1:$hport/v1/fleets/bench-fleet/servers"
hit="http://127.0.0.1:$hport/query/bench/identify"
a2s="http://127.0.0.1:$hport/query/cs2"
wait_http "$disc"
wait_http "$hit"
wait_http "$a2s"

declare -A sum
per_round=""
for r in $(seq "$rounds"); do
	for target in discovery game_query a2s; do
		case $target in
		discovery) v=$(rps "$disc") ;;
		game_query) v=$(rps "$hit") ;;
		a2s) v=$(rps "$a2s") ;;
		esac
		echo "round $r $target: $v requests/s" >&2
		sum[$target]=$(python3 -c "print(${sum[$target]:-0} + $v)")
		per_round="$per_round $target=$v"
	done
done

# Upstream datagrams per 10 000 requests at a 1 s TTL.
wait_http "http://127.0.0.1:$hport/query/bench/echo?arg=x"
up0=$(metric "127.0.0.1:$aport" 'gamegate_game_query_upstream_queries_total{server="bench"}')
gq0=$(metric "127.0.0.1:$aport" 'gamegate_gqp_queries_total{outcome="answered"}')
req0=$(metric "127.0.0.1:$aport" 'gamegate_game_query_requests_total{code="200"}')
rps "http://127.0.0.1:$hport/query/bench/echo?arg=x" >/dev/null
up1=$(metric "127.0.0.1:$aport" 'gamegate_game_query_upstream_queries_total{server="bench"}')
gq1=$(metric "127.0.0.1:$aport" 'gamegate_gqp_queries_total{outcome="answered"}')
req1=$(metric "127.0.0.1:$aport" 'gamegate_game_query_requests_total{code="200"}')

python3 - "$rounds" "${sum[discovery]}" "${sum[game_query]}" "${sum[a2s]}" "$up0" "$up1" "$gq0" "$gq1" "$req0" "$req1" "$duration" "$per_round" <<'PY'
import statistics, sys
rounds = int(sys.argv[1])
disc, gq, a2s = (float(x) / rounds for x in sys.argv[2:5])
up0, up1, gq0, gq1, req0, req1 = (float(x) for x in sys.argv[5:11])
print(f"wrk mean of {rounds} rounds")
print(f"{'path':28}{'requests/s':>12}")
print(f"{'qos_discovery 200':28}{disc:12.0f}")
print(f"{'game_query cached hit':28}{gq:12.0f}   ratio {gq/disc:.2f}x")
print(f"{'a2s status cached hit':28}{a2s:12.0f}   ratio {a2s/disc:.2f}x")
# Each round measures the three paths one after the other: on a shared
# machine the ratio within a round is steadier than the means.
runs = [kv.split("=") for kv in sys.argv[12].split()]
for path in ("game_query", "a2s"):
    ratios = [float(v) / float(runs[i - 1 if path == "game_query" else i - 2][1])
              for i, (k, v) in enumerate(runs) if k == path]
    print(f"{path} / discovery per round: median {statistics.median(ratios):.2f}x, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} rounds")
reqs = req1 - req0
print(f"1 s TTL, {sys.argv[11]} of wrk on one server and command: {reqs:.0f} HTTP requests, "
      f"{up1-up0:.0f} upstream queries sent, {gq1-gq0:.0f} answered by the GQP server: "
      f"{(up1-up0) / reqs * 10000:.2f} upstream datagrams per 10 000 requests")
PY
