// Package redisstore keeps Caddy's storage (certmagic.Storage) and the
// limits several gamegate nodes share in Redis, or in any server speaking
// its protocol (Valkey, a Redis cluster, Redis behind Sentinel). It is free
// of Caddy; caddymodule registers it as caddy.storage.redis.
//
// Layout: every key of one Store carries the hash tag {<prefix>}, so that
// all of them fall in one cluster slot and each operation is one atomic
// script. A value lives in the hash {p}f:<key> (fields v: the bytes, m: the
// modification time in unix milliseconds); each directory is the set
// {p}d:<dir> of its children's names, kept by the same scripts that store
// and delete; a lock is the string {p}l:<name> holding its holder's token,
// with an expiry the holder renews while it holds it.
package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/store"
)

// go-redis prints every failed dial to standard error, past Caddy's logs:
// an outage would print several lines a second. Failures reach the logs
// through the callers instead, once per outage.
func init() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// Defaults of Config.
const (
	DefaultAddress      = "127.0.0.1:6379"
	DefaultKeyPrefix    = "gamegate"
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = time.Second
	DefaultWriteTimeout = time.Second
	DefaultTimeout      = time.Second
	DefaultLockExpiry   = 10 * time.Second
	DefaultLockPoll     = 250 * time.Millisecond

	MaxDB          = 1 << 20 // Redis itself accepts up to its `databases` setting
	MaxKeyPrefix   = 64
	MaxTimeout     = time.Minute
	MinLockExpiry  = time.Second
	MaxLockExpiry  = time.Hour
	maxLockBackoff = 2 * time.Second
)

// Config is how a Store reaches its server. Its JSON is the
// caddy.storage.redis module's, which embeds it; the module replaces
// placeholders in address, username, password, master_name and
// tls_trusted_ca_certs before the Store sees them.
type Config struct {
	// The server's host:port; several are a cluster's seed nodes, or
	// Sentinels when master_name is set. Placeholders such as
	// {env.REDIS_ADDRESS} are replaced. Default: 127.0.0.1:6379.
	Addresses []string `json:"address,omitempty"`
	// The ACL user to authenticate as (needs password). Placeholders are
	// replaced. Default: none (the default user).
	Username string `json:"username,omitempty"`
	// The password (AUTH), best given as a placeholder such as
	// {env.REDIS_PASSWORD} so that it stays out of the configuration.
	// Default: none.
	Password string `json:"password,omitempty"`
	// The database number, in [0, 1048576] (the server's `databases`
	// setting bounds it further); a cluster has only 0. Default: 0.
	DB int `json:"db,omitempty"`
	// Connect with TLS, verifying the server's certificate against the
	// system's roots. Default: false.
	TLS bool `json:"tls,omitempty"`
	// The name the server's certificate is checked against; needs tls.
	// Default: the address's host.
	TLSServerName string `json:"tls_server_name,omitempty"`
	// Do not verify the server's certificate (testing only: anyone on the
	// path can then read and change the storage); needs tls.
	// Default: false.
	TLSInsecureSkipVerify bool `json:"tls_insecure_skip_verify,omitempty"`
	// PEM files of the certificate authorities the server's certificate
	// is verified against, instead of the system's roots (a private CA);
	// needs tls. Placeholders are replaced. Default: none (the system's
	// roots).
	TLSTrustedCACerts []string `json:"tls_trusted_ca_certs,omitempty"`
	// TLSRootCAs, if set, are the certificate authorities the server's
	// certificate is verified against instead of the system's roots
	// (LoadTrustedCACerts reads them from TLSTrustedCACerts).
	TLSRootCAs *x509.CertPool `json:"-"`
	// Starts every key, so that several services or fleets share one
	// server; at most 64 characters, no braces or spaces. Nodes that
	// share state must use the same one. Default: gamegate.
	KeyPrefix string `json:"key_prefix,omitempty"`
	// The Sentinel master's name: address then lists Sentinels, and the
	// storage follows the master they name. Placeholders are replaced.
	// Default: none (no Sentinel).
	MasterName string `json:"master_name,omitempty"`
	// How long connecting may take, at most 1m. Default: 1s.
	DialTimeout duration.Duration `json:"dial_timeout,omitempty"`
	// How long one network read may take, at most 1m. Default: 1s.
	ReadTimeout duration.Duration `json:"read_timeout,omitempty"`
	// How long one network write may take, at most 1m. Default: 1s.
	WriteTimeout duration.Duration `json:"write_timeout,omitempty"`
	// How long one storage operation may take, reconnection and retry
	// included, at most 1m: past it the operation fails, and operations
	// on that server fail at once for the next second, so that an API
	// request needing the store gets 503 within this however many
	// operations it makes. Default: 1s.
	Timeout duration.Duration `json:"timeout,omitempty"`
	// How long a lock outlives its holder's last renewal, in [1s, 1h];
	// the holder renews it every third of it, and a holder that died
	// leaves it to others after at most this. Default: 10s.
	LockExpiry duration.Duration `json:"lock_expiry,omitempty"`
	// LockPoll is the first wait between attempts to take a held lock;
	// it doubles up to 2s. Default: 250ms.
	LockPoll time.Duration `json:"-"`
	// Logger receives each change of a server's state (unreachable,
	// refusing the credentials, answering again) and lost locks.
	// Default: none.
	Logger *zap.Logger `json:"-"`
}

// Validate checks every field; zero values are defaults.
func (c *Config) Validate() error {
	if c.Username != "" && c.Password == "" {
		return errors.New("username needs a password")
	}
	if len(c.TLSTrustedCACerts) > 0 && !c.TLS {
		return errors.New("tls_trusted_ca_certs needs tls")
	}
	for _, a := range c.Addresses {
		host, port, err := splitHostPort(a)
		if err != nil || host == "" {
			return fmt.Errorf("address %q: want host:port", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("address %q: port must be in [1, 65535]", a)
		}
	}
	if err := bounds.Int("db", c.DB, 0, MaxDB); err != nil {
		return err
	}
	if c.DB != 0 && len(c.Addresses) > 1 && c.MasterName == "" {
		return errors.New("db must be 0 for a cluster (several addresses)")
	}
	if !c.TLS && (c.TLSServerName != "" || c.TLSInsecureSkipVerify) {
		return errors.New("tls_server_name and tls_insecure_skip_verify need tls")
	}
	if !c.TLS && c.TLSRootCAs != nil {
		return errors.New("tls_trusted_ca_certs needs tls")
	}
	if len(c.KeyPrefix) > MaxKeyPrefix || strings.ContainsAny(c.KeyPrefix, "{}") || strings.ContainsFunc(c.KeyPrefix, isSpaceOrControl) {
		return fmt.Errorf("key_prefix must be at most %d characters without braces, spaces or control characters", MaxKeyPrefix)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		lo   time.Duration
		hi   time.Duration
	}{
		{"dial_timeout", c.DialTimeout.Std(), 0, MaxTimeout},
		{"read_timeout", c.ReadTimeout.Std(), 0, MaxTimeout},
		{"write_timeout", c.WriteTimeout.Std(), 0, MaxTimeout},
		{"timeout", c.Timeout.Std(), 0, MaxTimeout},
		{"lock_expiry", c.LockExpiry.Std(), MinLockExpiry, MaxLockExpiry},
		{"lock_poll", c.LockPoll, 0, MaxTimeout},
	} {
		if err := bounds.Duration(d.name, d.v, d.lo, d.hi); err != nil {
			return err
		}
	}
	return nil
}

// LoadTrustedCACerts reads the PEM files of TLSTrustedCACerts into
// TLSRootCAs (none: it leaves TLSRootCAs as it is).
func (c *Config) LoadTrustedCACerts() error {
	if len(c.TLSTrustedCACerts) == 0 {
		return nil
	}
	pool := x509.NewCertPool()
	for _, f := range c.TLSTrustedCACerts {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("tls_trusted_ca_certs: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("tls_trusted_ca_certs: %s holds no PEM certificate", f)
		}
	}
	c.TLSRootCAs = pool
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

func splitHostPort(a string) (host, port string, err error) {
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return "", "", errors.New("no port")
	}
	host, port = a[:i], a[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", "", errors.New("an IPv6 host needs brackets")
	}
	return host, port, nil
}

// withDefaults returns c with its defaults filled in.
func (c Config) withDefaults() Config {
	if len(c.Addresses) == 0 {
		c.Addresses = []string{DefaultAddress}
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	def := func(d *duration.Duration, v time.Duration) {
		if *d == 0 {
			*d = duration.Duration(v)
		}
	}
	def(&c.DialTimeout, DefaultDialTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.Timeout, DefaultTimeout)
	def(&c.LockExpiry, DefaultLockExpiry)
	if c.LockPoll == 0 {
		c.LockPoll = DefaultLockPoll
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Store is a certmagic.Storage in Redis, and the limits of package
// redisstore's Limiter. It is safe for concurrent use.
type Store struct {
	cfg     Config
	client  redis.UniversalClient
	cluster *redis.ClusterClient // client, when it is a cluster's
	tag     string               // "{prefix}", the start of every key

	mu sync.Mutex
	// locks are the holds this Store has, by name, oldest first: several
	// when a hold expired on the server (its renewals did not reach it)
	// and the name was taken again here before the first holder unlocked.
	locks map[string][]*heldLock

	// servers are the health of each server the client talks to, by
	// address: each node of a cluster has its own, so that a dead master
	// fails only the operations on its slots; a single server or the
	// master behind Sentinel is one ("").
	servers sync.Map // string → *serverHealth
	// reloaded is when, in unix nanoseconds, the cluster's slot map was
	// last asked to reload after a node failed.
	reloaded atomic.Int64
}

// heldLock is a lock this Store holds and renews.
type heldLock struct {
	token string
	stop  context.CancelFunc
	done  chan struct{}
}

// New returns a Store for cfg, which must be valid. It does not connect:
// the first operation does, and every operation reconnects as needed.
//
// The client is set for failing fast: one dial per attempt (go-redis
// would otherwise dial five times, 100 ms apart), one retry (a connection
// the server closed while it idled in the pool), a wait for a pooled
// connection no longer than Timeout, and a cluster's slot map reloaded
// whenever a node fails (see serverHealth) rather than only on MOVED or
// once a minute.
func New(cfg Config) *Store {
	cfg = cfg.withDefaults()
	opts := &redis.UniversalOptions{
		Addrs:                 cfg.Addresses,
		Username:              cfg.Username,
		Password:              cfg.Password,
		DB:                    cfg.DB,
		MasterName:            cfg.MasterName,
		DialTimeout:           min(cfg.DialTimeout, cfg.Timeout).Std(),
		ReadTimeout:           cfg.ReadTimeout.Std(),
		WriteTimeout:          cfg.WriteTimeout.Std(),
		PoolTimeout:           cfg.Timeout.Std(),
		ContextTimeoutEnabled: true,
		DialerRetries:         1,
		MaxRetries:            1,
		// A Sentinel-managed master must not be reached through its
		// Sentinels with the master's credentials unless they are the
		// same; operators who need separate ones use ACLs.
		SentinelUsername: cfg.Username,
		SentinelPassword: cfg.Password,
		DisableIdentity:  true,
	}
	if cfg.TLS {
		opts.TLSConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			ServerName:         cfg.TLSServerName,
			RootCAs:            cfg.TLSRootCAs,
			InsecureSkipVerify: cfg.TLSInsecureSkipVerify, //nolint:gosec // the operator's explicit choice
		}
	}
	s := &Store{
		cfg:   cfg,
		tag:   "{" + cfg.KeyPrefix + "}",
		locks: make(map[string][]*heldLock),
	}
	switch {
	case cfg.MasterName == "" && len(cfg.Addresses) > 1:
		s.cluster = redis.NewClusterClient(opts.Cluster())
		// Every node's client carries the health of its own address;
		// OnNewNode covers the nodes the slot map names later.
		s.cluster.OnNewNode(func(c *redis.Client) {
			c.AddHook(failFast{s, s.server(c.Options().Addr)})
		})
		s.client = s.cluster
	default:
		s.client = redis.NewUniversalClient(opts)
		s.client.AddHook(failFast{s, s.server("")})
	}
	s.client.AddHook(roundTripCounter{})
	return s
}

// ErrDown is the error of an operation not sent because its server failed
// to answer within the last second: it matches ErrUnavailable too.
var ErrDown error = downError{}

type downError struct{}

func (downError) Error() string {
	return "not sent: the server did not answer within the last second"
}
func (downError) Is(target error) bool { return target == ErrUnavailable }

// DownFor is how long a server that could not be reached is not asked
// again: operations on it fail at once with ErrDown meanwhile, so that a
// request needing several operations fails within one Timeout however
// many it makes, and at most one operation a second waits on a server
// that hangs. It is also the Retry-After of the answers that fail.
const DownFor = time.Second

// failFast fails every command at once while its server is known down,
// and notes what each command's outcome says of the server: a command, a
// script or a pipeline of the client alike.
type failFast struct {
	s *Store
	h *serverHealth
}

func (failFast) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f failFast) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.h.isDown() {
			f.s.reloadSlots()
			cmd.SetErr(ErrDown)
			return ErrDown
		}
		start := time.Now()
		err := next(ctx, cmd)
		f.s.note(f.h, err, start)
		return err
	}
}

func (f failFast) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.h.isDown() {
			f.s.reloadSlots()
			for _, cmd := range cmds {
				cmd.SetErr(ErrDown)
			}
			return ErrDown
		}
		start := time.Now()
		err := next(ctx, cmds)
		f.s.note(f.h, err, start)
		return err
	}
}

// serverHealth is what the last operations said of one server.
type serverHealth struct {
	addr string // "" for the one server (or Sentinel's master)
	// downUntil is when, in unix nanoseconds, the server may be asked
	// again (see DownFor).
	downUntil atomic.Int64
	// state is the server's last known state, logged when it changes.
	state atomic.Int32
}

// States of a server.
const (
	stateOK          int32 = iota // answering
	stateUnreachable              // refusing connections, or silent
	stateDenied                   // refusing the credentials or a command (ACL)
)

func (s *Store) server(addr string) *serverHealth {
	if h, ok := s.servers.Load(addr); ok {
		return h.(*serverHealth)
	}
	h, _ := s.servers.LoadOrStore(addr, &serverHealth{addr: addr})
	return h.(*serverHealth)
}

func (h *serverHealth) isDown() bool {
	until := h.downUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// note takes what err, the outcome of a command sent at start, says of
// h's server: an answer (redis.Nil and error replies included) says it is
// up; a refused credential or command, that it is misconfigured; a failed
// dial, a broken connection, or a wait that ran out says it is
// unreachable, and it is then not asked again for DownFor. A wait shorter
// than half the store's bounds is a caller's own deadline, and says
// nothing.
func (s *Store) note(h *serverHealth, err error, start time.Time) {
	switch kind := classify(err); kind {
	case stateOK:
		s.setState(h, stateOK, nil)
	case stateDenied:
		s.setState(h, stateDenied, err)
	default:
		if errors.Is(err, context.DeadlineExceeded) && time.Since(start) < min(s.cfg.Timeout, s.cfg.ReadTimeout).Std()/2 {
			return
		}
		if errors.Is(err, context.Canceled) {
			return
		}
		h.downUntil.Store(time.Now().Add(DownFor).UnixNano())
		s.reloadSlots()
		s.setState(h, stateUnreachable, err)
	}
}

// classify says what an operation's error says of its server.
func classify(err error) int32 {
	if err == nil || errors.Is(err, redis.Nil) {
		return stateOK
	}
	if denied(err) {
		return stateDenied
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// The server answered, but a cluster without the slot's master
		// (or one still loading its data) cannot serve the slot.
		for _, p := range []string{"CLUSTERDOWN", "MASTERDOWN", "LOADING", "TRYAGAIN"} {
			if redis.HasErrorPrefix(err, p) {
				return stateUnreachable
			}
		}
		return stateOK
	}
	return stateUnreachable
}

// denied reports whether err is the server refusing the credentials or a
// command or key the ACL user may not use, directly or inside a script,
// or a server certificate that does not verify: misconfigurations that
// waiting does not mend.
func denied(err error) bool {
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p+" ") || strings.Contains(msg, ": "+p) {
			return true
		}
	}
	// Redis 7.0 refuses a script's command or key in an ERR reply.
	return strings.Contains(msg, "The user executing the script can't")
}

// setState logs a change of h's state, once.
func (s *Store) setState(h *serverHealth, state int32, err error) {
	if old := h.state.Swap(state); old == state {
		return
	}
	log := s.cfg.Logger.With(zap.String("server", s.serverName(h)))
	switch state {
	case stateOK:
		log.Info("storage redis: the server answers again")
	case stateUnreachable:
		log.Warn("storage redis: the server cannot be reached; operations on it fail at once for a second at a time until it answers", zap.Error(err))
	case stateDenied:
		log.Error("storage redis: the server refuses the credentials or a command, or its certificate does not verify: check username, password, the ACL user's rights and the TLS options", zap.Error(err))
	}
}

func (s *Store) serverName(h *serverHealth) string {
	if h.addr != "" {
		return h.addr
	}
	if s.cfg.MasterName != "" {
		return "master " + s.cfg.MasterName + " via " + strings.Join(s.cfg.Addresses, ",")
	}
	return strings.Join(s.cfg.Addresses, ",")
}

// reloadSlots asks a cluster client to reload its slot map, at most every
// reloadEvery: a node that fails may have lost its slots to a replica.
func (s *Store) reloadSlots() {
	if s.cluster == nil {
		return
	}
	now := time.Now().UnixNano()
	last := s.reloaded.Load()
	if now-last < int64(reloadEvery) || !s.reloaded.CompareAndSwap(last, now) {
		return
	}
	s.cluster.ReloadState(context.Background())
}

// reloadEvery bounds how often a cluster's slot map is reloaded while
// nodes fail. go-redis reloads in the background, one at a time.
const reloadEvery = 250 * time.Millisecond

// roundTrips counts the requests every Store of this process sent: a
// command, a pipeline or a transaction is one.
var roundTrips atomic.Int64

// RoundTrips returns how many requests the Stores of this process have
// sent to their servers, each waiting for its answer: a command (a script
// included), a pipeline or a transaction counts one.
func RoundTrips() int64 { return roundTrips.Load() }

type roundTripCounter struct{}

func (roundTripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (roundTripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (roundTripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		roundTrips.Add(1)
		return next(ctx, cmds)
	}
}

// Client returns the Redis client, for shared state beside the storage.
func (s *Store) Client() redis.UniversalClient { return s.client }

// KeyPrefix returns the prefix every key of s starts with, braces
// included.
func (s *Store) KeyPrefix() string { return s.tag }

// Timeout returns the bound of each operation.
func (s *Store) Timeout() time.Duration { return s.cfg.Timeout.Std() }

// Close releases the locks s holds and closes its connections.
func (s *Store) Close() error {
	s.mu.Lock()
	var names []string
	for name, hs := range s.locks {
		for range hs {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	for _, name := range names {
		_ = s.Unlock(context.Background(), name)
	}
	return s.client.Close()
}

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return wrap("ping", "", s.client.Ping(ctx).Err())
}

// Check tries what every node needs of the server with the configured
// credentials: PING, reading a storage key, and a rate limit's script
// (EVALSHA or EVAL, TIME, GET), changing nothing. An error matching
// ErrDenied is a misconfiguration; one matching ErrUnavailable an outage.
func (s *Store) Check(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if _, err := s.Load(ctx, "gamegate/check"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_, err := s.Wait(ctx, "check", time.Second, time.Second)
	return err
}

// Addresses returns the configured addresses, for messages.
func (s *Store) Addresses() []string { return s.cfg.Addresses }

func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.Timeout.Std())
}

// clean makes a storage key canonical: separated by single slashes,
// without a leading or trailing one, "" being the root.
func clean(key string) string {
	key = path.Clean("/" + key)
	return strings.TrimPrefix(key, "/")
}

// parent splits a canonical key into its directory and its name.
func parent(key string) (dir, name string) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}

func (s *Store) fileKey(key string) string { return s.tag + "f:" + key }
func (s *Store) dirKey(key string) string  { return s.tag + "d:" + key }
func (s *Store) lockKey(name string) string {
	return s.tag + "l:" + name
}

// ancestry returns the directory set keys from key's parent up to the
// root, and the name key has in each (ARGV for storeScript and
// unlinkScript).
func (s *Store) ancestry(key string) (dirs, names []string) {
	for key != "" {
		dir, name := parent(key)
		dirs = append(dirs, s.dirKey(dir))
		names = append(names, name)
		key = dir
	}
	return dirs, names
}

// storeScript writes KEYS[1]'s value (ARGV[1]) and modification time
// (ARGV[2]), then adds each name ARGV[2+i] to the directory KEYS[1+i].
var storeScript = redis.NewScript(`
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'm', ARGV[2])
for i = 2, #KEYS do
	redis.call('SADD', KEYS[i], ARGV[i+1])
end
return 1
`)

// Store puts value at key.
func (s *Store) Store(ctx context.Context, key string, value []byte) error {
	key = clean(key)
	if key == "" {
		return errors.New("storing at the root key")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	keys, args := s.storeOp(key, value)
	return wrap("store", key, storeScript.Run(ctx, s.client, keys, args...).Err())
}

// storeOp returns storeScript's KEYS and ARGV to put value at the
// canonical key.
func (s *Store) storeOp(key string, value []byte) (keys []string, args []any) {
	dirs, names := s.ancestry(key)
	keys = append([]string{s.fileKey(key)}, dirs...)
	args = make([]any, 0, 2+len(names))
	args = append(args, value, time.Now().UnixMilli())
	for _, n := range names {
		args = append(args, n)
	}
	return keys, args
}

// Apply stores each value of puts and deletes each key of deletes (with
// every key below it) in one transaction: every node reads all of the
// change or none of it. Deletes are applied first.
func (s *Store) Apply(ctx context.Context, puts map[string][]byte, deletes []string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	type op struct {
		script *redis.Script
		keys   []string
		args   []any
	}
	var ops []op
	for _, key := range deletes {
		keys, args, err := s.deleteOp(ctx, clean(key))
		if err != nil {
			return err
		}
		ops = append(ops, op{deleteScript, keys, args})
	}
	for _, key := range slices.Sorted(maps.Keys(puts)) {
		ck := clean(key)
		if ck == "" {
			return errors.New("storing at the root key")
		}
		keys, args := s.storeOp(ck, puts[key])
		ops = append(ops, op{storeScript, keys, args})
	}
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range ops {
			// EVAL, not EVALSHA: a script the server has not cached would
			// fail inside the transaction, after the others applied.
			o.script.Eval(ctx, p, o.keys, o.args...)
		}
		return nil
	})
	return wrap("apply", strings.Join(append(slices.Sorted(maps.Keys(puts)), deletes...), ","), err)
}

// Load returns the value at key; a missing key is an error matching
// fs.ErrNotExist.
func (s *Store) Load(ctx context.Context, key string) ([]byte, error) {
	key = clean(key)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	b, err := s.client.HGet(ctx, s.fileKey(key), "v").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notExist(key)
	}
	if err != nil {
		return nil, wrap("load", key, err)
	}
	return b, nil
}

// Exists reports whether key is a value or a directory. An error reads as
// false.
func (s *Store) Exists(ctx context.Context, key string) bool {
	key = clean(key)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.client.Exists(ctx, s.fileKey(key), s.dirKey(key)).Result()
	return err == nil && n > 0
}

// Stat describes key: a value (terminal, with its size and modification
// time) or a directory. A missing key is an error matching fs.ErrNotExist.
func (s *Store) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	key = clean(key)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var modified *redis.StringCmd
	var size, dir *redis.IntCmd
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		modified = p.HGet(ctx, s.fileKey(key), "m")
		size = p.HStrLen(ctx, s.fileKey(key), "v")
		dir = p.Exists(ctx, s.dirKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return certmagic.KeyInfo{}, wrap("stat", key, err)
	}
	if ms, err := modified.Int64(); err == nil {
		return certmagic.KeyInfo{Key: key, Modified: time.UnixMilli(ms), Size: size.Val(), IsTerminal: true}, nil
	}
	if dir.Val() > 0 {
		return certmagic.KeyInfo{Key: key}, nil
	}
	return certmagic.KeyInfo{}, notExist(key)
}

// List returns the keys below prefix: its children, or with recursive
// every key below it, directories included. A prefix that is neither a
// value nor a directory is an error matching fs.ErrNotExist; a value's
// list is empty.
func (s *Store) List(ctx context.Context, prefix string, recursive bool) ([]string, error) {
	prefix = clean(prefix)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var root *redis.StringSliceCmd
	var isFile *redis.IntCmd
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		root = p.SMembers(ctx, s.dirKey(prefix))
		isFile = p.Exists(ctx, s.fileKey(prefix))
		return nil
	})
	if err != nil {
		return nil, wrap("list", prefix, err)
	}
	if len(root.Val()) == 0 {
		if isFile.Val() > 0 {
			return nil, nil
		}
		return nil, notExist(prefix)
	}
	var keys []string
	level := join(prefix, root.Val())
	for len(level) > 0 {
		keys = append(keys, level...)
		if !recursive {
			break
		}
		// One round trip per level of the tree: the children of every
		// key of this level.
		cmds := make([]*redis.StringSliceCmd, len(level))
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range level {
				cmds[i] = p.SMembers(ctx, s.dirKey(k))
			}
			return nil
		})
		if err != nil {
			return nil, wrap("list", prefix, err)
		}
		var next []string
		for i, k := range level {
			next = append(next, join(k, cmds[i].Val())...)
		}
		level = next
	}
	slices.Sort(keys)
	return keys, nil
}

func join(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		if dir == "" {
			out[i] = n
		} else {
			out[i] = dir + "/" + n
		}
	}
	slices.Sort(out)
	return out
}

// deleteScript deletes a key and everything below it, then unlists it
// from its ancestors. KEYS are, in order: the nsub value and directory keys
// of the key and everything below it (deleted); the nlevels directory sets
// from the key's parent up to the root; the value keys and the directory
// keys of the nodes listed in those sets (the key, its parent, ...). ARGV
// are nsub, nlevels and the nodes' names. A node is unlisted from its
// parent's set only while it has neither a value nor children, and the
// walk stops at the first node that keeps one.
var deleteScript = redis.NewScript(`
local nsub = tonumber(ARGV[1])
local nlevels = tonumber(ARGV[2])
for i = 1, nsub do
	redis.call('DEL', KEYS[i])
end
for level = 1, nlevels do
	local set = KEYS[nsub + level]
	local fkey = KEYS[nsub + nlevels + level]
	local dkey = KEYS[nsub + 2 * nlevels + level]
	if redis.call('EXISTS', fkey, dkey) > 0 then
		return 1
	end
	redis.call('SREM', set, ARGV[2 + level])
end
return 1
`)

// Delete deletes key and every key below it. A missing key is not an
// error.
func (s *Store) Delete(ctx context.Context, key string) error {
	key = clean(key)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	keys, args, err := s.deleteOp(ctx, key)
	if err != nil {
		return err
	}
	return wrap("delete", key, deleteScript.Run(ctx, s.client, keys, args...).Err())
}

// deleteOp returns deleteScript's KEYS and ARGV to delete the canonical
// key and what is below it now.
func (s *Store) deleteOp(ctx context.Context, key string) (keys []string, args []any, err error) {
	below, err := s.List(ctx, key, true)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	keys = []string{s.fileKey(key), s.dirKey(key)}
	for _, k := range below {
		keys = append(keys, s.fileKey(k), s.dirKey(k))
	}
	nsub := len(keys)
	sets, names := s.ancestry(key)
	keys = append(keys, sets...)
	var fkeys, dkeys []string
	for node := key; node != ""; node, _ = parent(node) {
		fkeys = append(fkeys, s.fileKey(node))
		dkeys = append(dkeys, s.dirKey(node))
	}
	keys = append(append(keys, fkeys...), dkeys...)
	args = []any{nsub, len(names)}
	for _, n := range names {
		args = append(args, n)
	}
	return keys, args, nil
}

// Lock takes the lock name, waiting while another holder has it, until ctx
// ends. While held, it is renewed every third of LockExpiry; a holder that
// dies stops renewing and the lock expires.
//
// A lock whose renewals did not reach the server for LockExpiry (an
// outage, a paused process) expires while held. If no one took it
// meanwhile, the next renewal takes it again; if another holder did, the
// loss is logged at error level and the renewals stop. certmagic's
// Locker gives no way to tell the holder (Lock has returned; Unlock names
// no hold) and Caddy's file storage behaves the same with a stale lock:
// a lock is a lease that makes double work rare, and certmagic's
// operations check again after taking a lock whether their work is still
// needed.
func (s *Store) Lock(ctx context.Context, name string) error {
	wait := s.cfg.LockPoll
	for {
		ok, err := s.TryLock(ctx, name)
		if ok || ctx.Err() != nil {
			if err == nil && !ok {
				err = ctx.Err()
			}
			return err
		}
		// A failed attempt (the server unreachable) waits as a held lock
		// does: Lock returns only with the lock or when ctx ends.
		t := time.NewTimer(jitter(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxLockBackoff)
	}
}

// jitter returns d spread over [d/2, d), so that contenders that wake
// together do not retry in step.
func jitter(d time.Duration) time.Duration {
	var b [8]byte
	_, _ = rand.Read(b[:])
	f := float64(uint64(b[0])|uint64(b[1])<<8) / 65536
	return d/2 + time.Duration(f*float64(d/2))
}

// TryLock takes the lock name if no one holds it, and reports whether it
// did.
func (s *Store) TryLock(ctx context.Context, name string) (bool, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	bctx, cancel := s.bound(ctx)
	defer cancel()
	ok, err := s.client.SetNX(bctx, s.lockKey(name), token, s.cfg.LockExpiry.Std()).Result()
	if err != nil {
		return false, wrap("lock", name, err)
	}
	if !ok {
		return false, nil
	}
	rctx, stop := context.WithCancel(context.Background())
	h := &heldLock{token: token, stop: stop, done: make(chan struct{})}
	s.mu.Lock()
	for _, old := range s.locks[name] {
		// Ours, expired while no renewal reached the server, and now taken
		// afresh: the old renewal has nothing left to renew. The old hold
		// stays listed, so that its holder's Unlock releases it (nothing)
		// rather than this one.
		old.stop()
	}
	s.locks[name] = append(s.locks[name], h)
	s.mu.Unlock()
	go s.renew(rctx, name, h)
	return true, nil
}

// renewScript extends lock KEYS[1] by ARGV[2] milliseconds if its holder
// is still ARGV[1] (returns 1), or takes it again for ARGV[1] if it
// expired and no one took it since (returns 2: renewals that did not
// reach the server in time, during an outage); 0 if another holder has it.
var renewScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if not holder then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 2
end
return 0
`)

// renew keeps h's lock until ctx ends or the lock is lost (expired and
// taken by another holder).
func (s *Store) renew(ctx context.Context, name string, h *heldLock) {
	defer close(h.done)
	every := s.cfg.LockExpiry.Std() / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		n, err := renewScript.Run(rctx, s.client, []string{s.lockKey(name)}, h.token, s.cfg.LockExpiry.Std().Milliseconds()).Int()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.cfg.Logger.Warn("renewing a storage lock failed; trying again", zap.String("lock", name), zap.Error(err))
			continue
		}
		switch n {
		case 0:
			// certmagic's Locker has no way to tell the holder: its work
			// goes on, and the new holder's may overlap it (see Lock).
			s.cfg.Logger.Error("a storage lock expired while held and another holder took it: the work it guards may run twice",
				zap.String("lock", name))
			return
		case 2:
			s.cfg.Logger.Warn("a storage lock expired while held (its renewals did not reach the server in time) and was taken again; no other holder had it",
				zap.String("lock", name))
		}
	}
}

// unlockScript deletes lock KEYS[1] if its holder is ARGV[1].
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// Unlock releases the lock name that s holds. A lock that expired and was
// taken by another holder is left to that holder. When s took name more
// than once (a hold expired, and name was taken again before its holder
// unlocked), Unlock releases the oldest hold: certmagic's Unlock names no
// holder, and the holds of one name are taken in turn, so the oldest
// holder is the one that took it first; an expired hold releases nothing.
func (s *Store) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	hs := s.locks[name]
	var h *heldLock
	if len(hs) > 0 {
		h = hs[0]
		if len(hs) == 1 {
			delete(s.locks, name)
		} else {
			s.locks[name] = slices.Delete(hs, 0, 1)
		}
	}
	s.mu.Unlock()
	if h == nil {
		return fmt.Errorf("unlocking %q: not held", name)
	}
	h.stop()
	<-h.done
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return wrap("unlock", name, unlockScript.Run(ctx, s.client, []string{s.lockKey(name)}, h.token).Err())
}

// notExist is the error of a missing key.
func notExist(key string) error { return fmt.Errorf("%s: %w", key, fs.ErrNotExist) }

// ErrUnavailable is matched (errors.Is) by every error of the server or of
// reaching it.
var ErrUnavailable = store.ErrUnavailable

type storeError struct {
	op, key string
	err     error
}

func (e *storeError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("redis storage: %s: %v", e.op, e.err)
	}
	return fmt.Sprintf("redis storage: %s %s: %v", e.op, e.key, e.err)
}
func (e *storeError) Unwrap() []error {
	if denied(e.err) {
		return []error{ErrDenied, e.err}
	}
	return []error{ErrUnavailable, e.err}
}

// ErrDenied is matched (errors.Is) by the errors of a server that refused
// the credentials (WRONGPASS, NOAUTH) or a command or key (NOPERM), or
// whose certificate did not verify: a misconfiguration, not an outage, so
// it does not match ErrUnavailable.
var ErrDenied = errors.New("the server refuses the credentials or a command")

func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return &storeError{op, key, err}
}

// Interface guards
var (
	_ certmagic.Storage   = (*Store)(nil)
	_ certmagic.TryLocker = (*Store)(nil)
)
