package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limits every node sharing the server enforces together, each decision one
// round trip (one script).

// gcraScript is the generic cell rate algorithm on the key KEYS[1], which
// holds the theoretical arrival time of the next event in microseconds of
// the server's clock (so that the nodes' clocks need not agree): ARGV[1] is
// what one event costs, ARGV[2] how far ahead of now the arrival time may
// run (the cost of a whole burst), both in microseconds. It returns {1, 0}
// for an event allowed, or {0, µs until one would be}.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
	tat = now
end
local nexttat = tat + interval
if nexttat - now > window then
	return {0, math.ceil(nexttat - now - window)}
end
redis.call('SET', KEYS[1], string.format('%.0f', nexttat), 'PX', math.ceil((nexttat - now) / 1000) + 1)
return {1, 0}
`)

// Allow reports whether one more event of key is allowed, counted across
// every node using the server, by the generic cell rate algorithm: each
// event costs interval (1/rate), and the events allowed may run ahead of
// time by window (a burst's cost: burst × interval). If not, it also
// returns how long until one would be. A key's state expires once its
// whole burst is back.
func (s *Store) Allow(ctx context.Context, key string, interval, window time.Duration) (bool, time.Duration, error) {
	if interval <= 0 || window < interval {
		return false, 0, errBadLimit
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := gcraScript.Run(ctx, s.client, []string{s.cfg.KeyPrefix + ":rate:" + key},
		max(interval.Microseconds(), 1), max(window.Microseconds(), 1)).Int64Slice()
	if err == nil && len(res) != 2 {
		err = errBadReply
	}
	if err != nil {
		return false, 0, wrap("limit", key, err)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond, nil
}

// gcraWaitScript is gcraScript's decision without counting: µs until an
// event of KEYS[1] would be allowed, 0 if it would be now.
var gcraWaitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
	tat = now
end
local wait = tat + tonumber(ARGV[1]) - now - tonumber(ARGV[2])
if wait < 0 then
	return 0
end
return math.ceil(wait)
`)

// Wait returns how long until Allow would allow an event of key, without
// counting one: 0 if it would now.
func (s *Store) Wait(ctx context.Context, key string, interval, window time.Duration) (time.Duration, error) {
	if interval <= 0 || window < interval {
		return 0, errBadLimit
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	us, err := gcraWaitScript.Run(ctx, s.client, []string{s.cfg.KeyPrefix + ":rate:" + key},
		max(interval.Microseconds(), 1), max(window.Microseconds(), 1)).Int64()
	if err != nil {
		return 0, wrap("limit", key, err)
	}
	return time.Duration(us) * time.Microsecond, nil
}

var (
	errBadLimit = errorString("redis limits: an interval must be positive, and a window at least one interval")
	errBadReply = errorString("unexpected reply")
)

type errorString string

func (e errorString) Error() string { return string(e) }

// reserveScript counts member (ARGV[3]) until its expiry (ARGV[2], unix
// milliseconds) in the pool KEYS[1] and in its holders' sets KEYS[2..]
// (the client's, the network's), unless, at ARGV[1], the pool holds
// ARGV[4] unexpired members already (returns {1, ms until the first
// expires}) or holder i its quota ARGV[4+i] (>0) (returns {1+i, ms}).
// Each set expires with its last member.
var reserveScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local expires = tonumber(ARGV[2])
for i = 1, #KEYS do
	redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
	local quota = tonumber(ARGV[3 + i])
	if quota > 0 and redis.call('ZCARD', KEYS[i]) >= quota then
		local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
		return {i, tonumber(first[2]) - now}
	end
end
for i = 1, #KEYS do
	redis.call('ZADD', KEYS[i], expires, ARGV[3])
	local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
	redis.call('PEXPIREAT', KEYS[i], math.max(expires, tonumber(last[2])))
end
return {0, 0}
`)

// Reserve counts member, an allocation expiring at expires, in pool if,
// at now, pool holds fewer than limit unexpired members, client fewer than
// perClient and network fewer than perNetwork (0: no such limit) across
// every pool. Otherwise it returns which limit was reached (1: pool, 2:
// client, 3: network) and how long until one of the members it counts
// expires. A holder's count is shared by every pool: a client's
// allocations count wherever they were made.
func (s *Store) Reserve(ctx context.Context, pool, member string, now, expires time.Time, limit int, client string, perClient int, network string, perNetwork int) (int, time.Duration, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := reserveScript.Run(ctx, s.client, s.poolKeys(pool, client, network),
		now.UnixMilli(), expires.UnixMilli(), member, max(limit, 1), perClient, perNetwork).Int64Slice()
	if err == nil && len(res) != 2 {
		err = errBadReply
	}
	if err != nil {
		return 0, 0, wrap("reserve", pool, err)
	}
	return int(res[0]), time.Duration(res[1]) * time.Millisecond, nil
}

var releaseScript = redis.NewScript(`
for i = 1, #KEYS do
	redis.call('ZREM', KEYS[i], ARGV[1])
end
return 1
`)

// Release uncounts member, reserved and not handed out.
func (s *Store) Release(ctx context.Context, pool, member, client, network string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return wrap("release", pool, releaseScript.Run(ctx, s.client, s.poolKeys(pool, client, network), member).Err())
}

// poolKeys are a pool's set and its holders' sets. All carry one hash
// tag, so that one script may use them on a cluster.
func (s *Store) poolKeys(pool, client, network string) []string {
	tag := "{" + s.cfg.KeyPrefix + ":pools}"
	return []string{tag + "pool:" + pool, tag + "client:" + client, tag + "network:" + network}
}
