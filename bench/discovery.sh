#!/usr/bin/env bash
# Discovery benchmark: requests/s of gamegate's qos_discovery handler against
# Caddy's own file_server serving the same JSON body (with its ETag), in the
# same run, with the same client (wrk) and concurrency, for 200 and for 304
# answers. Reported as ratios. Everything listens on loopback.
#
#	bench/discovery.sh [duration] [rounds]     (defaults: 10s, 2)
#
# Installs wrk from Debian's packages when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
rounds=${2:-2}
threads=${WRK_THREADS:-2}
conns=${WRK_CONNECTIONS:-32}

. bench/lib.sh
ensure_wrk

work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/gamegate" ./cmd/gamegate

# A fleet of eight servers in four regions: about 1 KB of JSON, the size of a
# real discovery answer.
cat >"$work/fleets.json" <<'JSON'
{"fleets": {"bench-fleet": {"servers": [
 {"location_id": 123, "region_id": "4f7d1d1a-a565-40b4-955a-ff0257d7ed3b", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "port": 9000},
 {"location_id": 124, "region_id": "4f7d1d1a-a565-40b4-955a-ff0257d7ed3b", "ipv4": "192.0.2.2", "ipv6": "", "port": 9000},
 {"location_id": 456, "region_id": "22bf10c2-2565-4e75-848f-d2df25210896", "ipv4": "198.51.100.1", "ipv6": "2001:db8:1::1", "port": 9000},
 {"location_id": 457, "region_id": "22bf10c2-2565-4e75-848f-d2df25210896", "ipv4": "198.51.100.2", "ipv6": "", "port": 9000},
 {"location_id": 789, "region_id": "0d6a8a3e-5a0b-4d0e-9b6f-3f1c2e4d5a6b", "ipv4": "203.0.113.1", "ipv6": "2001:db8:2::1", "port": 9000},
 {"location_id": 790, "region_id": "0d6a8a3e-5a0b-4d0e-9b6f-3f1c2e4d5a6b", "ipv4": "203.0.113.2", "ipv6": "", "port": 9000},
 {"location_id": 901, "region_id": "9e1f0c4b-7a2d-4c3e-8f5a-1b2c3d4e5f60", "ipv4": "192.0.2.90", "ipv6": "2001:db8:3::1", "port": 9000},
 {"location_id": 902, "region_id": "9e1f0c4b-7a2d-4c3e-8f5a-1b2c3d4e5f60", "ipv4": "192.0.2.91", "ipv6": "", "port": 9000}
]}}}
JSON
mkdir -p "$work/www/v1/fleets/bench-fleet"
fport=$(free_port)
dport=$(free_port)
cat >"$work/Caddyfile" <<CADDY
{
	admin off
	default_bind 127.0.0.1
}
http://:$fport {
	root * $work/www
	file_server
}
http://:$dport {
	qos_discovery {
		fleets_file $work/fleets.json
		field_names seed
	}
}
CADDY
"$work/gamegate" run --config "$work/Caddyfile" >"$work/caddy.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$dport/v1/fleets/bench-fleet/servers" -o "$work/www/v1/fleets/bench-fleet/servers" && break; sleep 0.1; done
dpath=/v1/fleets/bench-fleet/servers
bytes=$(wc -c <"$work/www/v1/fleets/bench-fleet/servers")
cmp <(curl -fs "http://127.0.0.1:$fport$dpath") <(curl -fs "http://127.0.0.1:$dport$dpath") || { echo "bodies differ" >&2; exit 1; }
fetag=$(curl -fsI "http://127.0.0.1:$fport$dpath" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
detag=$(curl -fsI "http://127.0.0.1:$dport$dpath" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $fetag" "http://127.0.0.1:$fport$dpath")" = 304 ] || { echo "file_server did not answer 304" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $detag" "http://127.0.0.1:$dport$dpath")" = 304 ] || { echo "qos_discovery did not answer 304" >&2; exit 1; }

declare -A sum
for r in $(seq "$rounds"); do
	for target in file_200 disc_200 file_304 disc_304; do
		case $target in
		file_200) v=$(rps "http://127.0.0.1:$fport$dpath") ;;
		disc_200) v=$(rps "http://127.0.0.1:$dport$dpath") ;;
		file_304) v=$(rps -H "If-None-Match: $fetag" "http://127.0.0.1:$fport$dpath") ;;
		disc_304) v=$(rps -H "If-None-Match: $detag" "http://127.0.0.1:$dport$dpath") ;;
		esac
		echo "round $r $target: $v requests/s" >&2
		sum[$target]=$(python3 -c "print(${sum[$target]:-0} + $v)")
	done
done
python3 - "$bytes" "$rounds" "${sum[file_200]}" "${sum[disc_200]}" "${sum[file_304]}" "${sum[disc_304]}" <<'PY'
import sys
size, rounds = int(sys.argv[1]), int(sys.argv[2])
f200, d200, f304, d304 = (float(x) / rounds for x in sys.argv[3:7])
print(f"body {size} bytes, wrk mean of {rounds} rounds")
print(f"{'answer':8}{'file_server':>14}{'qos_discovery':>16}{'ratio':>9}")
print(f"{'200':8}{f200:14.0f}{d200:16.0f}{d200/f200:8.2f}×")
print(f"{'304':8}{f304:14.0f}{d304:16.0f}{d304/f304:8.2f}×")
PY
