package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gamegate/gamegate/store"
)

// Lists of game servers that masters on every node share, each one
// round trip (one script). A list's keys carry one hash tag,
// {<key_prefix>:list:<name>}, so that a script may use them all on a
// cluster:
//
//	…}exp    sorted set: server address → expiry (ms of the server's clock)
//	…}val    hash: server address → the master's record of it
//	…}chg    sorted set: server address → sequence number of its last change
//	…}seq    the last sequence number
//	…}per    hash: IP address → servers listed from it
//	…}epoch  a random value set with the list's first server: a new one
//	         means the list was lost (a restart without persistence)
//
// Every key expires a minute after the last server it holds.

// registerScript lists or refreshes ARGV[1] (an address ip:port) with the
// value ARGV[2] until ARGV[3] ms from now, unless new and the list holds
// ARGV[4] servers, or ARGV[5] from its IP address; ARGV[6] is the epoch
// set if the list has none. Expired servers are forgotten first (at most
// 1000 a call). It returns a store registration outcome.
var registerScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ipof(a)
	return string.match(a, '^(.*):%d+$') or a
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
for _, a in ipairs(old) do
	redis.call('ZREM', KEYS[1], a)
	redis.call('HDEL', KEYS[2], a)
	redis.call('ZREM', KEYS[3], a)
	if redis.call('HINCRBY', KEYS[5], ipof(a), -1) <= 0 then
		redis.call('HDEL', KEYS[5], ipof(a))
	end
end
local addr = ARGV[1]
local known = redis.call('ZSCORE', KEYS[1], addr)
if not known then
	if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
		return 2
	end
	if tonumber(redis.call('HGET', KEYS[5], ipof(addr)) or '0') >= tonumber(ARGV[5]) then
		return 3
	end
	redis.call('HINCRBY', KEYS[5], ipof(addr), 1)
end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, addr)
redis.call('HSET', KEYS[2], addr, ARGV[2])
redis.call('SET', KEYS[6], ARGV[6], 'NX')
local seq = redis.call('INCR', KEYS[4])
redis.call('ZADD', KEYS[3], seq, addr)
for i = 1, 6 do
	if redis.call('PTTL', KEYS[i]) < ttl + 60000 then
		redis.call('PEXPIRE', KEYS[i], ttl + 60000)
	end
end
if known then
	return 1
end
return 0
`)

// changesScript returns the list's epoch, its last sequence number, the
// sequence number read up to, then address, ms to live and value of each
// unexpired server changed after ARGV[1] (all of them when ARGV[2] is not
// the list's epoch or the list's sequence went back), at most ARGV[3].
var changesScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[6]) or ''
local seq = tonumber(redis.call('GET', KEYS[4]) or '0')
local since = tonumber(ARGV[1])
if epoch ~= ARGV[2] or seq < since then
	since = 0
end
local limit = tonumber(ARGV[3])
local changed = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
local upto = seq
if #changed / 2 >= limit then
	upto = tonumber(changed[#changed])
end
local out = {epoch, seq, upto}
for i = 1, #changed, 2 do
	local a = changed[i]
	local exp = redis.call('ZSCORE', KEYS[1], a)
	local v = redis.call('HGET', KEYS[2], a)
	if exp and v and tonumber(exp) > now then
		out[#out + 1] = a
		out[#out + 1] = tonumber(exp) - now
		out[#out + 1] = v
	end
end
return out
`)

func (s *Store) listKeys(list string) []string {
	tag := "{" + s.cfg.KeyPrefix + ":list:" + list + "}"
	return []string{tag + "exp", tag + "val", tag + "chg", tag + "seq", tag + "per", tag + "epoch"}
}

// RegisterServer lists the server at addr (ip:port) in the shared list
// named list with value until expiry from now, or refreshes it, unless it
// is new and the list holds maxServers servers, or maxPerAddress from its
// IP address: every node's registrations count together. It returns a
// store registration outcome (store.Registered, …).
func (s *Store) RegisterServer(ctx context.Context, list, addr string, value []byte, expiry time.Duration, maxServers, maxPerAddress int) (int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var epoch [8]byte
	_, _ = rand.Read(epoch[:])
	n, err := registerScript.Run(ctx, s.client, s.listKeys(list), addr, value, max(expiry.Milliseconds(), 1),
		max(maxServers, 1), max(maxPerAddress, 1), hex.EncodeToString(epoch[:])).Int()
	if err != nil {
		return 0, wrap("register", list, err)
	}
	return n, nil
}

// ServerChanges returns the servers of the shared list named list that
// changed since cursor (every server, if the list was lost since), at
// most limit, with the cursor to read on from: read again at once while
// more is true.
func (s *Store) ServerChanges(ctx context.Context, list string, since store.ListCursor, limit int) (servers []store.ListedServer, next store.ListCursor, more bool, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := changesScript.Run(ctx, s.client, s.listKeys(list), since.Seq, since.Epoch, max(limit, 1)).Slice()
	if err == nil && (len(res) < 3 || (len(res)-3)%3 != 0) {
		err = errBadReply
	}
	if err != nil {
		return nil, since, false, wrap("list", list, err)
	}
	epoch, _ := res[0].(string)
	seq, _ := res[1].(int64)
	upto, _ := res[2].(int64)
	for i := 3; i+2 < len(res); i += 3 {
		addr, _ := res[i].(string)
		ms, _ := res[i+1].(int64)
		v, _ := res[i+2].(string)
		servers = append(servers, store.ListedServer{Addr: addr, TTL: time.Duration(ms) * time.Millisecond, Value: []byte(v)})
	}
	return servers, store.ListCursor{Epoch: epoch, Seq: upto}, upto < seq, nil
}
