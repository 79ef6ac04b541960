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

# A fleet of eight servers in four regions (about 1 KB of JSON, the size of a
# real discovery answer), the file bench/run's discovery workload serves too.
cp bench/internal/httpload/fleets.json "$work/fleets.json"
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
