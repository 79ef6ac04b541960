#!/usr/bin/env bash
# Runs BenchmarkEcho and BenchmarkEchoOneInFlight of package dgram
# (gamegate's UDP server against a bare Go echo loop, with 16 datagrams in
# flight per client and with one) in several rounds, a pause between them
# (the machine may be shared), and prints each variant's round trips per
# second over the bare loop's of the same round and benchmark: the median
# and the range, with the load average.
#
#	bench/dgram.sh [rounds] [benchtime] [benchmark regexp]
#	# defaults: 5 1s '^BenchmarkEcho(OneInFlight)?$'
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
benchtime=${2:-1s}
bench=${3:-'^BenchmarkEcho(OneInFlight)?$'}
bin=$(mktemp -d)/dgram.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" ./dgram
out=$(for r in $(seq "$rounds"); do
	[ "$r" -gt 1 ] && sleep 2
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" | grep '^BenchmarkEcho'
done)
echo "$out"
echo "$out" | awk '
	/^load/ { loads = loads sep $2; sep = ", "; next }
	{
		name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 3; i < NF; i++) if ($(i+1) == "roundtrips/s") rate = $i
		bench = name; sub(/\/.*/, "", bench)
		if (name == bench "/bare") { base[bench] = rate; next }
		n[name]++; ratio[name, n[name]] = rate / base[bench]
		if (!(name in seen)) { seen[name] = 1; order[++k] = name }
	}
	END {
		printf "load average (1 min) before each round: %s\n", loads
		printf "%-36s %s\n", "VARIANT", "ROUND TRIPS/S OVER THE BARE LOOP OF THE SAME ROUND: MEDIAN (RANGE)"
		for (j = 1; j <= k; j++) {
			name = order[j]; m = n[name]
			for (a = 1; a <= m; a++) s[a] = ratio[name, a]
			for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
			med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
			printf "%-36s %.2f× (%.2f–%.2f)\n", name, med, s[1], s[m]
		}
	}'
