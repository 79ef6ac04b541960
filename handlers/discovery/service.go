package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/periodic"
)

// Config is the behaviour of a Service, and the access rules of its
// Handler: the qos_discovery handler's options, whose JSON it is (the
// module embeds it). Zero values mean the defaults.
type Config struct {
	// Fleets declared inline: fleet ID → its QoS servers (Caddyfile: one
	// fleet block each). Default: none.
	Fleets map[string][]ConfiguredServer `json:"fleets,omitempty"`
	// A JSON file of fleets, {"fleets": {"<id>": {"servers": [...]}}},
	// re-read when it changes. A file that fails to parse keeps the last
	// good list in service. Its fleets take precedence over inline ones.
	// Default: none.
	File string `json:"fleets_file,omitempty"`
	// How often the fleets file is checked for changes, from 100ms to 24h.
	// Default: 2s.
	FilePoll duration.Duration `json:"file_poll,omitempty"`
	// Overrides, set at run time (the admin API), take precedence over
	// every other source. They outlive the Service.
	Overrides *Overrides `json:"-"`
	// Spelling of the ID fields in answers: "both" writes location_id and
	// region_id (the protocol document's names) and locationid and regionid
	// (the names the shipped Unity client reads); "seed" or "unity" writes
	// only one pair (ParseFieldNames). Default: both.
	FieldNames string `json:"field_names,omitempty"`
	// Send strong ETags. By default ETags are weak (W/"…"), because the
	// shipped Unity discovery client ignores strong ones. Default: false.
	StrongETag bool `json:"strong_etag,omitempty"`
	// Cache-Control max-age of answers, from 1s (max-age counts whole
	// seconds) to 24h. Default: 1200s (the protocol's 20-minute discovery
	// interval).
	MaxAge duration.Duration `json:"max_age,omitempty"`
	// Client addresses allowed, as CIDRs or single IPs (the client address
	// honours the server's trusted_proxies). Others get 403: the Handler's
	// Access.Allow (AllowNetworks). Default: all.
	Allow []string `json:"allow,omitempty"`
	// API keys, any of which a caller must send as "Authorization: Bearer
	// <key>" (or "X-Api-Key: <key>", which Caddy's access log records);
	// others get 401 with "WWW-Authenticate: Bearer". After 20 requests
	// without a valid key, a client network gets 429 with Retry-After, valid
	// key or not, until it has earned another attempt (one per 10 s).
	// Placeholders such as {env.DISCOVERY_KEY} are replaced. On a server
	// that listens beyond loopback each must be at least 16 bytes and not a
	// development default. Answers to callers that pass allow or api_keys
	// are Cache-Control: private. The Handler's Access.Keys. Default: none
	// required.
	APIKeys []string `json:"api_keys,omitempty"`
	// Private marks answers Cache-Control: private (set when callers must
	// authenticate, so shared caches do not keep answers).
	Private bool `json:"-"`
	// Health checks of the listed QoS servers. Default: off.
	Health *HealthConfig `json:"health_check,omitempty"`
	// The name under which the admin API reaches this handler's fleets;
	// handlers with the same name share their admin-set fleets, which
	// survive configuration reloads. At most 64 bytes, without '/' or
	// control characters. Default: default.
	Name string `json:"name,omitempty"`
	// Logger receives source and health events. Default: no logging.
	Logger *zap.Logger `json:"-"`
	// OnFileLoad is called after each attempt to load the file, with the
	// error (nil on success), for metrics.
	OnFileLoad func(error) `json:"-"`
}

// Service answers discovery requests from the current snapshots.
type Service struct {
	cfg          Config
	inline       map[string][]Server // cfg.Fleets, without repeated servers
	names        FieldNames
	cacheControl string
	store        cache.Snapshots[string]

	mu          sync.Mutex
	fileFleets  map[string][]Server
	fileLoaded  bool   // a good copy of the file has been loaded
	fileErr     error  // the last load's error
	fileSum     []byte // digest of the content last read
	withheld    map[string]map[Server]bool
	healthState map[string]*healthState // by probe address

	stop chan struct{}
	done sync.WaitGroup
}

// NewService builds a Service and loads its sources once. Start runs the
// file watcher and health checks; Stop ends them.
func NewService(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.FilePoll <= 0 {
		cfg.FilePoll = duration.Duration(DefaultFilePoll)
	}
	if cfg.Overrides == nil {
		cfg.Overrides = NewOverrides()
	}
	cc := "max-age=" + strconv.FormatInt(int64(cfg.MaxAge.Std()/time.Second), 10)
	if cfg.Private {
		cc = "private, " + cc
	}
	// A service never runs with values Validate refuses (a negative
	// interval, say), whoever built its Config.
	if err := cfg.validateService(); err != nil {
		return nil, err
	}
	names, _ := ParseFieldNames(cfg.FieldNames) // Validate checked it
	s := &Service{
		cfg:          cfg,
		inline:       cfg.inline(),
		names:        names,
		cacheControl: cc,
		withheld:     make(map[string]map[Server]bool),
		healthState:  make(map[string]*healthState),
		stop:         make(chan struct{}),
	}
	if cfg.File != "" {
		s.loadFile()
	}
	s.rebuild()
	return s, nil
}

// Start begins watching the fleets file and health-checking servers.
func (s *Service) Start() {
	s.cfg.Overrides.attach(s)
	// What the admin API changed since NewService read the overrides.
	s.rebuild()
	if s.cfg.File != "" {
		s.done.Go(func() {
			periodic.Run(s.stop, s.cfg.FilePoll.Std(), func() {
				if s.loadFile() {
					s.rebuild()
				}
			})
		})
	}
	if h := s.cfg.Health; h != nil {
		s.done.Go(func() { periodic.Run(s.stop, h.Interval.Std(), s.healthRound) })
	}
}

// Stop ends the background work and waits for it.
func (s *Service) Stop() {
	s.cfg.Overrides.detach(s)
	close(s.stop)
	s.done.Wait()
}

// loadFile reads the fleets file if its content changed, and reports
// whether the good copy changed. A bad file keeps the last good copy. A file
// that is unchanged since the last attempt, good or bad, is not parsed or
// reported again.
func (s *Service) loadFile() bool {
	data, err := readBounded(s.cfg.File, MaxFleetFile)
	var fleets map[string][]Server
	var sum []byte
	if err == nil {
		d := sha256.Sum256(data)
		sum = d[:]
		s.mu.Lock()
		same := s.fileSum != nil && bytes.Equal(sum, s.fileSum)
		s.mu.Unlock()
		if same {
			return false
		}
		fleets, err = ParseFleets(data)
	} else {
		s.mu.Lock()
		same := s.fileSum == nil && s.fileErr != nil && s.fileErr.Error() == err.Error()
		s.mu.Unlock()
		if same {
			return false // still unreadable, for the same reason
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.OnFileLoad != nil {
		s.cfg.OnFileLoad(err)
	}
	if err != nil {
		if s.fileErr == nil || s.fileErr.Error() != err.Error() {
			s.cfg.Logger.Error("fleets file is unusable; keeping the last good list",
				zap.String("file", s.cfg.File), zap.Bool("have_good_copy", s.fileLoaded), zap.Error(err))
		}
		s.fileErr = err
		s.fileSum = sum
		return false
	}
	s.fileErr, s.fileSum = nil, sum
	s.fileFleets, s.fileLoaded = fleets, true
	s.cfg.Logger.Info("fleets file loaded", zap.String("file", s.cfg.File), zap.Int("fleets", len(fleets)))
	return true
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("fleets file longer than %d bytes", limit)
	}
	return data, nil
}

// effective returns each fleet's list from its highest-priority source:
// overrides, then the file, then inline configuration.
func (s *Service) effective() map[string][]Server {
	out := make(map[string][]Server)
	for id, list := range s.inline {
		out[id] = list
	}
	for id, list := range s.fileFleets {
		out[id] = list
	}
	for id, list := range s.cfg.Overrides.all() {
		out[id] = list
	}
	return out
}

// rebuild recomputes every fleet's snapshot; fleets whose content did not
// change keep their snapshot and ETag.
func (s *Service) rebuild() {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*cache.Snapshot)
	for id, list := range s.effective() {
		list = s.filterHealthy(id, list)
		next[id] = cache.NewSnapshot(Render(list, s.names), "application/json", !s.cfg.StrongETag)
	}
	for _, id := range s.store.Replace(next) {
		if snap := next[id]; snap != nil {
			s.cfg.Logger.Debug("fleet list changed", zap.String("fleet", id), zap.String("etag", snap.ETag))
		}
	}
}

// Lookup returns the snapshot of a fleet. Without one, it returns the
// status to answer: 404 for an unknown fleet, or 500 when a source that may
// hold the fleet is broken and no good copy of it was ever loaded.
func (s *Service) Lookup(fleet string) (*cache.Snapshot, int, string) {
	if snap := s.store.Get(fleet); snap != nil {
		return snap, http.StatusOK, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.File != "" && !s.fileLoaded && s.fileErr != nil {
		// The file's error (paths, OS error text) is logged, not sent.
		return nil, http.StatusInternalServerError, "fleet source unavailable: the fleets file could not be loaded"
	}
	return nil, http.StatusNotFound, "fleet does not exist"
}

// Fleets returns the IDs and current lists of every fleet (after health
// filtering), for inspection.
func (s *Service) Fleets() map[string]*cache.Snapshot { return s.store.All() }

// Serve writes the answer for fleet to w: 200 with the list, 304 when
// If-None-Match matches, the same headers without a body for HEAD, or the
// JSON error of Lookup. The method must already be GET or HEAD. It returns
// the status written.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request, fleet string) int {
	snap, status, msg := s.Lookup(fleet)
	if snap == nil {
		WriteError(w, status, msg)
		return status
	}
	h, v := w.Header(), new(cache.HeaderValues)
	v.Set(h, 0, "Etag", snap.ETag)
	v.Set(h, 1, "Cache-Control", s.cacheControl)
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && ifNoneMatchAny(inm, snap.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	v.Set(h, 2, "Content-Type", snap.ContentType)
	v.Set(h, 3, "Content-Length", snap.ContentLength)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(snap.Body)
	}
	return http.StatusOK
}

func ifNoneMatchAny(values []string, etag string) bool {
	for _, v := range values {
		if cache.IfNoneMatch(v, etag) {
			return true
		}
	}
	return false
}

// WriteError writes the discovery service's JSON error body. Clients rely
// on the status code; error_message says what happened.
func WriteError(w http.ResponseWriter, status int, msg string) {
	body := append([]byte(`{"success":false,"error":true,"error_code":-1,"error_message":`), appendQuoted(msg)...)
	body = append(body, `,"messages":[]}`...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func appendQuoted(s string) []byte { return appendJSONString(nil, s) }

// HealthConfig is how servers are health-checked: the qos_discovery
// handler's health_check options, by their JSON and Caddyfile names.
type HealthConfig struct {
	// Fleets to check. Default: all.
	Fleets []string `json:"fleets,omitempty"`
	// Time between checks, from 100ms to 24h. Checks never overlap: a
	// check lasts the time to send its requests plus wait, and ticks that
	// come while one runs are dropped, so with a wait longer than the
	// interval they run back to back. Default: 10s.
	Interval duration.Duration `json:"interval,omitempty"`
	// Consecutive failed checks before a server is withheld from answers;
	// one passed check restores it. Default: 3.
	Failures int `json:"failures,omitempty"`
	// QoS requests per check; a check passes if any is answered. Default: 3.
	Requests int `json:"requests,omitempty"`
	// How long to wait for answers after the last request is sent, from
	// 1ms (a round trip to a QoS server nearby) to 1h. Default: 1s.
	Wait duration.Duration `json:"wait,omitempty"`
	// ProbeKey signs the checks as health probes (qos.CheckConfig), which
	// QoS engines holding the same key answer even while they ban the
	// checker's address (as anyone who forges a burst from it can make
	// them do). Default: none.
	ProbeKey []byte `json:"-"`
}

type healthState struct {
	failures int
}

func (s *Service) healthChecked(fleet string) bool {
	if len(s.cfg.Health.Fleets) == 0 {
		return true
	}
	for _, f := range s.cfg.Health.Fleets {
		if f == fleet {
			return true
		}
	}
	return false
}

// filterHealthy drops withheld servers of fleet, unless that would leave it
// empty: then it serves them all and logs an error. The caller holds s.mu.
func (s *Service) filterHealthy(fleet string, list []Server) []Server {
	w := s.withheld[fleet]
	if len(w) == 0 {
		return list
	}
	out := make([]Server, 0, len(list))
	for _, srv := range list {
		if !w[srv] {
			out = append(out, srv)
		}
	}
	if len(out) == 0 && len(list) > 0 {
		s.cfg.Logger.Error("every server of the fleet fails its health checks; serving them all",
			zap.String("fleet", fleet), zap.Int("servers", len(list)))
		return list
	}
	return out
}

// healthRound probes every distinct server of the health-checked fleets
// once and updates which servers are withheld.
func (s *Service) healthRound() {
	h := s.cfg.Health
	s.mu.Lock()
	fleets := s.effective()
	s.mu.Unlock()
	var targets []qos.Target
	for id, list := range fleets {
		if !s.healthChecked(id) {
			continue
		}
		for _, srv := range list {
			targets = append(targets, srv.QoSTarget(false))
		}
	}
	if len(targets) == 0 {
		return
	}
	checker, err := qos.NewChecker(qos.CheckConfig{Requests: h.Requests, Wait: h.Wait.Std(), Title: "gamegate health check", ProbeKey: h.ProbeKey})
	if err != nil {
		s.cfg.Logger.Error("health check", zap.Error(err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.Wait.Std()+5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	results, err := checker.Check(ctx, targets)
	if err != nil {
		s.cfg.Logger.Error("health check", zap.Error(err))
		return
	}
	passed := make(map[string]bool, len(results))
	for _, r := range results {
		passed[r.Addr.String()] = r.Received > 0
	}
	s.mu.Lock()
	// Count each probed address once, however many fleets list it.
	for key, ok := range passed {
		st := s.healthState[key]
		if st == nil {
			st = &healthState{}
			s.healthState[key] = st
		}
		if ok {
			st.failures = 0
		} else {
			st.failures++
		}
	}
	changed := false
	for id, list := range fleets {
		if !s.healthChecked(id) {
			continue
		}
		for _, srv := range list {
			key := srv.Addr().String()
			st, probed := s.healthState[key]
			if !probed {
				continue
			}
			down := st.failures >= h.Failures
			if s.withheld[id] == nil {
				s.withheld[id] = make(map[Server]bool)
			}
			if s.withheld[id][srv] != down {
				changed = true
				s.cfg.Logger.Warn("QoS server health changed", zap.String("fleet", id),
					zap.String("server", key), zap.Bool("withheld", down), zap.Int("consecutive_failures", st.failures))
				if down {
					s.withheld[id][srv] = true
				} else {
					delete(s.withheld[id], srv)
				}
			}
		}
	}
	s.mu.Unlock()
	if changed {
		s.rebuild()
	}
}

// Withheld returns how many servers are withheld by health checks now.
func (s *Service) Withheld() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.withheld {
		n += len(w)
	}
	return n
}

// Overrides are fleet lists set at run time, kept outside any one Service so
// they survive configuration reloads. Every attached Service is rebuilt when
// they change.
type Overrides struct {
	mu       sync.Mutex
	m        map[string][]Server
	services map[*Service]bool
	shared   *sharing // nil: not shared
	writes   sync.Mutex
}

// NewOverrides returns an empty set.
func NewOverrides() *Overrides {
	return &Overrides{m: make(map[string][]Server), services: make(map[*Service]bool)}
}

func (o *Overrides) attach(s *Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.services[s] = true
}

func (o *Overrides) detach(s *Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.services, s)
}

func (o *Overrides) all() map[string][]Server {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]Server, len(o.m))
	for k, v := range o.m {
		out[k] = v
	}
	return out
}

// Set replaces fleet's list. When o is shared, the list is written to the
// shared store first; if that fails (an error matching
// ErrSharedUnavailable) nothing changes.
func (o *Overrides) Set(fleet string, servers []Server) error {
	if err := ValidateFleetID(fleet); err != nil {
		return err
	}
	servers = Dedupe(servers)
	o.writes.Lock()
	defer o.writes.Unlock()
	if err := o.writeShared(fleet, servers, false); err != nil {
		return err
	}
	o.mu.Lock()
	o.m[fleet] = servers
	services := o.attached()
	o.mu.Unlock()
	for _, s := range services {
		s.rebuild()
	}
	return nil
}

// Delete removes fleet's override, reporting whether there was one. When
// o is shared, it is deleted from the shared store first; if that fails
// (an error matching ErrSharedUnavailable) nothing changes.
func (o *Overrides) Delete(fleet string) (bool, error) {
	o.writes.Lock()
	defer o.writes.Unlock()
	o.mu.Lock()
	_, ok := o.m[fleet]
	o.mu.Unlock()
	if !ok {
		return false, nil
	}
	if err := o.writeShared(fleet, nil, true); err != nil {
		return false, err
	}
	o.mu.Lock()
	delete(o.m, fleet)
	services := o.attached()
	o.mu.Unlock()
	for _, s := range services {
		s.rebuild()
	}
	return ok, nil
}

// writeShared writes a change to the shared store, if o is shared.
func (o *Overrides) writeShared(fleet string, servers []Server, deleted bool) error {
	o.mu.Lock()
	sh := o.shared
	o.mu.Unlock()
	if sh == nil {
		return nil
	}
	return sh.write(fleet, servers, deleted)
}

// Get returns fleet's override.
func (o *Overrides) Get(fleet string) ([]Server, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.m[fleet]
	return l, ok
}

func (o *Overrides) attached() []*Service {
	out := make([]*Service, 0, len(o.services))
	for s := range o.services {
		out = append(out, s)
	}
	return out
}

// IDs returns the fleet IDs that have an override.
func (o *Overrides) IDs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.m))
	for k := range o.m {
		out = append(out, k)
	}
	return out
}
