# Shared helpers of the wrk benchmark scripts (sourced, not run).

# ensure_wrk installs wrk from Debian's packages when it is missing.
ensure_wrk() {
	command -v wrk >/dev/null && return
	echo "bench: installing wrk (Debian package)" >&2
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq wrk >/dev/null
	else
		sudo apt-get update -qq && sudo apt-get install -y -qq wrk >/dev/null
	fi
}

# free_port prints a loopback TCP or UDP port that was free a moment ago.
free_port() {
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "${1:-tcp}"
}

# wait_http waits up to 10 s for a URL to answer 2xx.
wait_http() {
	for _ in $(seq 100); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done
	echo "bench: $1 did not come up" >&2
	return 1
}

# rps runs wrk with the script's threads, connections and duration and
# prints requests per second.
rps() { wrk -t"$threads" -c"$conns" -d"$duration" "$@" | awk '/Requests\/sec/{print $2}'; }

# metric prints a Prometheus sample from Caddy's admin endpoint.
metric() { curl -fs "http://$1/metrics" | awk -v s="$2" '$1==s{print $2}'; }
