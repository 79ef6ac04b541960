package caddystorage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/certmagic"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/store/redisstore"
)

func init() {
	caddy.RegisterModule(new(RedisStorage))
}

// RedisStorage is Caddy's storage in Redis (or Valkey, a Redis cluster, or
// Redis behind Sentinel), so that several gamegate nodes share one: Caddy's
// certificates and locks, and gamegate's join codes, allocation counts,
// API limits and discovery's admin changes. Locks expire when their holder
// dies and are renewed while it lives. Set it with the global option:
//
//	{
//		storage redis {
//			address 127.0.0.1:6379
//		}
//	}
//
// Every operation is bounded by timeout: when the server cannot be
// reached, requests that need it fail within it (the relay API and
// discovery answer 503 with Retry-After), and the store is used again as
// soon as it answers. At start the storage tries the server with its
// credentials: credentials or ACL rights the server refuses are a startup
// error naming the address; a server that cannot be reached is logged,
// and the node starts without it.
type RedisStorage struct {
	// The storage's options: address, username, password, db, tls,
	// tls_server_name, tls_insecure_skip_verify, tls_trusted_ca_certs,
	// key_prefix, master_name, dial_timeout, read_timeout, write_timeout,
	// timeout, lock_expiry.
	redisstore.Config

	cfg     redisstore.Config // with placeholders replaced
	poolKey string
	store   *redisstore.Store
}

// redisStores holds the open stores by configuration, so that a reload
// keeps the connections and the locks held.
var redisStores = caddy.NewUsagePool()

// storeRange is the range the store's Config holds option opt to, by its
// JSON name.
func storeRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[redisstore.Config](opt)
}

// storeDurationRange is storeRange for a duration option.
func storeDurationRange(opt string) caddyglue.DurationRange {
	return caddyglue.ConfigDurationRange[redisstore.Config](opt)
}

// CaddyModule returns the Caddy module information.
func (*RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.storage.redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

// Provision replaces placeholders and opens (or adopts) the store; it does
// not connect.
func (s *RedisStorage) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	replace := func(v string) string { return repl.ReplaceKnown(v, "") }
	s.cfg = s.Config
	s.cfg.Addresses = replaceAll(s.Addresses, replace)
	s.cfg.Username = replace(s.Username)
	s.cfg.Password = replace(s.Password)
	s.cfg.MasterName = replace(s.MasterName)
	s.cfg.TLSTrustedCACerts = replaceAll(s.TLSTrustedCACerts, replace)
	if err := s.cfg.LoadTrustedCACerts(); err != nil {
		return err
	}
	// The pool key names the CA files rather than the pool (which does
	// not marshal): a changed file takes effect with a new store.
	key, err := json.Marshal(s.cfg)
	if err != nil {
		return err
	}
	s.poolKey = string(key)
	cfg := s.cfg
	cfg.Logger = ctx.Logger()
	v, loaded, err := redisStores.LoadOrNew(s.poolKey, func() (caddy.Destructor, error) {
		return redisStoreDestructor{redisstore.New(cfg)}, nil
	})
	if err != nil {
		return err
	}
	s.store = v.(redisStoreDestructor).Store
	if !loaded && s.validated().Validate() == nil {
		return s.check(ctx)
	}
	return nil
}

// check tries a new store's server with its credentials: refused
// credentials or rights fail the configuration; a server that cannot be
// reached is logged, and the node starts without it (its operations fail
// until it answers).
func (s *RedisStorage) check(ctx caddy.Context) error {
	err := s.store.Check(ctx)
	addrs := strings.Join(s.store.Addresses(), " ")
	if s.cfg.MasterName != "" {
		addrs = "master " + s.cfg.MasterName + " via " + addrs
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redisstore.ErrDenied):
		return fmt.Errorf("redis at %s refuses the configured credentials or rights, or its certificate does not verify (check username, password, the ACL user's commands and keys, and the tls options): %w", addrs, err)
	default:
		// The store logged it, once.
		return nil
	}
}

type redisStoreDestructor struct{ *redisstore.Store }

func (d redisStoreDestructor) Destruct() error { return d.Close() }

// Validate checks every option (redisstore.Config.Validate) with
// placeholders replaced by Provision, but for username and password, as
// configured: a password given as a placeholder that is empty where the
// configuration is validated is still a password.
func (s *RedisStorage) Validate() error { return s.validated().Validate() }

// validated is the configuration Validate checks.
func (s *RedisStorage) validated() *redisstore.Config {
	cfg := s.cfg
	cfg.Username, cfg.Password = s.Username, s.Password
	return &cfg
}

// replaceAll returns vs with placeholders replaced.
func replaceAll(vs []string, replace func(string) string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, replace(v))
	}
	return out
}

// Cleanup releases the store; the last configuration using it closes it.
func (s *RedisStorage) Cleanup() error {
	if s.poolKey == "" {
		return nil
	}
	_, err := redisStores.Delete(s.poolKey)
	return err
}

// CertMagicStorage returns the store.
func (s *RedisStorage) CertMagicStorage() (certmagic.Storage, error) {
	return s.store, nil
}

// UnmarshalCaddyfile reads the storage's block.
//
// Syntax:
//
//	storage redis {
//		address <host:port>...
//		username <user>
//		password <password>
//		db <n>
//		tls
//		tls_server_name <name>
//		tls_insecure_skip_verify
//		tls_trusted_ca_certs <pem_file>...
//		key_prefix <prefix>
//		master_name <name>
//		dial_timeout <duration>
//		read_timeout <duration>
//		write_timeout <duration>
//		timeout <duration>
//		lock_expiry <duration>
//	}
func (s *RedisStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseModuleBlock(d, "storage redis", nil, func(name string) error {
		var err error
		switch name {
		case "address":
			s.Addresses, err = caddyglue.ParseArgs(d)
		case "username":
			s.Username, err = caddyglue.ParseSingleArg(d)
		case "password":
			s.Password, err = caddyglue.ParseSingleArg(d)
		case "db":
			s.DB, err = caddyglue.ParseIntIn(d, storeRange(name))
		case "tls":
			err = caddyglue.ParseFlag(d, &s.TLS)
		case "tls_server_name":
			s.TLSServerName, err = caddyglue.ParseSingleArg(d)
		case "tls_insecure_skip_verify":
			err = caddyglue.ParseFlag(d, &s.TLSInsecureSkipVerify)
		case "tls_trusted_ca_certs":
			s.TLSTrustedCACerts, err = caddyglue.ParseArgs(d)
		case "key_prefix":
			s.KeyPrefix, err = caddyglue.ParseSingleArg(d)
		case "master_name":
			s.MasterName, err = caddyglue.ParseSingleArg(d)
		case "dial_timeout":
			s.DialTimeout, err = caddyglue.ParseConfigDurationIn(d, storeDurationRange(name))
		case "read_timeout":
			s.ReadTimeout, err = caddyglue.ParseConfigDurationIn(d, storeDurationRange(name))
		case "write_timeout":
			s.WriteTimeout, err = caddyglue.ParseConfigDurationIn(d, storeDurationRange(name))
		case "timeout":
			s.Timeout, err = caddyglue.ParseConfigDurationIn(d, storeDurationRange(name))
		case "lock_expiry":
			s.LockExpiry, err = caddyglue.ParseConfigDurationIn(d, storeDurationRange(name))
		default:
			return caddyglue.UnknownOption(d, "storage redis", name)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner      = (*RedisStorage)(nil)
	_ caddy.Validator        = (*RedisStorage)(nil)
	_ caddy.CleanerUpper     = (*RedisStorage)(nil)
	_ caddy.StorageConverter = (*RedisStorage)(nil)
	_ caddyfile.Unmarshaler  = (*RedisStorage)(nil)
)
