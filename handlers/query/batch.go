package query

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"sync/atomic"

	"github.com/gamegate/gamegate/internal/clientaddr"
)

// batchRequest lists servers and commands; every server is asked every
// command. A command is a name ("status" for the normalised status) or an
// object with a name and arguments.
type batchRequest struct {
	Servers  []string          `json:"servers"`
	Commands []json.RawMessage `json:"commands"`
}

type batchCommand struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

type batchResult struct {
	Server  string          `json:"server"`
	Command string          `json:"command"`
	Args    []string        `json:"args,omitempty"`
	Status  int             `json:"status"`
	Cache   string          `json:"cache,omitempty"`
	Body    json.RawMessage `json:"body"`
}

func (g *Gateway) batch(w http.ResponseWriter, r *http.Request) int {
	ip := g.cfg.ClientIP(r)
	if ok, wait := g.batchClients.Allow(g.batchLimit, clientaddr.Network(ip, 0, 0)); !ok {
		return g.writeError(w, r, "", &Error{HTTPStatus: http.StatusTooManyRequests, Type: TypeLimited, RetryAfter: wait,
			Message: "too many batches from this network; try again shortly"})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBody))
	if err != nil {
		return g.writeError(w, r, "", Errorf(http.StatusRequestEntityTooLarge, "the batch is larger than %d bytes", g.cfg.MaxBody))
	}
	var req batchRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return g.writeError(w, r, "", Errorf(http.StatusBadRequest, "the batch is not valid JSON of the expected shape: %v", err))
	}
	cmds := make([]batchCommand, 0, len(req.Commands))
	for _, raw := range req.Commands {
		var c batchCommand
		if err := json.Unmarshal(raw, &c.Name); err != nil {
			if err := json.Unmarshal(raw, &c); err != nil || c.Name == "" {
				return g.writeError(w, r, "", Errorf(http.StatusBadRequest, "a command is a name or {\"name\": …, \"args\": […]}"))
			}
		}
		cmds = append(cmds, c)
	}
	n := len(req.Servers) * len(cmds)
	switch {
	case n == 0:
		return g.writeError(w, r, "", Errorf(http.StatusBadRequest, "the batch needs at least one server and one command"))
	case n > g.cfg.MaxBatch:
		return g.writeError(w, r, "", Errorf(http.StatusRequestEntityTooLarge, "the batch asks %d queries; at most %d are allowed", n, g.cfg.MaxBatch))
	}
	// Each distinct question is asked and answered once: a repeated
	// server × command × arguments adds nothing to the answer.
	items := make([]batchResult, 0, n)
	seen := make(map[resultKey]struct{}, n)
	for _, s := range req.Servers {
		for _, c := range cmds {
			k := resultKey{target: s, command: c.Name, args: argsKey(c.Args)}
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			items = append(items, batchResult{Server: s, Command: c.Name, Args: c.Args})
		}
	}
	client := func() netip.Addr { return ip }

	// The answer is streamed in the order of the questions: each result
	// is written as soon as it and those before it are ready, its body the
	// cached answer's own bytes, so a batch holds no copy of the answers
	// it sends.
	ready := make(chan int, len(items))
	var next atomic.Int64
	for range min(g.cfg.BatchConcurrency, len(items)) {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) {
					return
				}
				g.batchOne(r.Context(), client, &items[i])
				ready <- i
			}
		}()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(w).Flush
	_, _ = io.WriteString(w, `{"results":[`)
	var sent int64 // bytes of results' bodies written
	done := make([]bool, len(items))
	for i := range items {
		for !done[i] {
			done[<-ready] = true
		}
		res := &items[i]
		if sent+int64(len(res.Body)) > g.cfg.MaxBatchAnswer {
			res.Status, res.Cache = http.StatusRequestEntityTooLarge, ""
			res.Body = errorAnswer(res.Server, Errorf(http.StatusRequestEntityTooLarge,
				"the batch's answer reached its limit of %d bytes; ask for this one alone", g.cfg.MaxBatchAnswer)).body
		}
		sent += int64(len(res.Body))
		head, _ := json.Marshal(batchResultHead{res.Server, res.Command, res.Args, res.Status, res.Cache})
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		_, _ = w.Write(head[:len(head)-1])
		_, _ = io.WriteString(w, `,"body":`)
		if _, err := w.Write(res.Body); err != nil {
			break // the client is gone; the workers end with its context
		}
		_, _ = io.WriteString(w, "}")
		res.Body = nil
		_ = flush()
	}
	_, _ = io.WriteString(w, "]}")
	return http.StatusOK
}

// batchResultHead is a batch result without its body, which is written
// after it as it is.
type batchResultHead struct {
	Server  string   `json:"server"`
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Status  int      `json:"status"`
	Cache   string   `json:"cache,omitempty"`
}

func (g *Gateway) batchOne(ctx context.Context, client func() netip.Addr, res *batchResult) {
	a, cr, e := g.request(ctx, client, res.Server, res.Command, res.Args)
	if e != nil {
		a = errorAnswer(res.Server, e)
	} else {
		res.Cache = cacheState(cr)
	}
	res.Status, res.Body = a.status, a.body
}
