package httpload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

// loadJob is one measurement of the clients' process.
type loadJob struct {
	Addr     string
	Req      []byte
	Want     int
	Conns    int
	Duration time.Duration
}

// loadResult is what the clients' process measured.
type loadResult struct {
	Rate float64
	Lat  []time.Duration
}

func init() {
	benchutil.RegisterChild("httpload", benchutil.ServeChild(func(j loadJob) (loadResult, error) {
		rate, lat, err := connsLoad(j.Addr, j.Req, j.Want, j.Conns, j.Duration)
		return loadResult{Rate: rate, Lat: lat}, err
	}))
}

// load runs connsLoad in a process of its own (this program started
// again): in the server's, the clients would share its Go scheduler and
// garbage collector, and the rounds would spread with them.
func load(addr string, req []byte, want, conns int, d time.Duration) (float64, []time.Duration, error) {
	var res loadResult
	err := benchutil.RunChild("httpload", d+time.Minute, loadJob{Addr: addr, Req: req, Want: want, Conns: conns, Duration: d}, &res)
	return res.Rate, res.Lat, err
}

// connsLoad keeps conns keep-alive HTTP/1.1 connections busy with req for
// d, one request at a time each (as wrk does), and returns the requests
// answered per second and their latencies. An answer with another status
// than want is an error. The client is a few lines over a socket, so that
// it costs the CPUs it shares with the server far less than net/http's.
func connsLoad(addr string, req []byte, want, conns int, d time.Duration) (float64, []time.Duration, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	start := time.Now()
	stop := start.Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := connLoad(addr, req, want, stop)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, l...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, nil, firstErr
	}
	return float64(len(lat)) / time.Since(start).Seconds(), lat, nil
}

func connLoad(addr string, req []byte, want int, stop time.Time) ([]time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(stop.Add(10 * time.Second))
	r := bufio.NewReaderSize(c, 64<<10)
	lat := make([]time.Duration, 0, 1<<14)
	for {
		t0 := time.Now()
		if !t0.Before(stop) {
			return lat, nil
		}
		if _, err := c.Write(req); err != nil {
			return lat, err
		}
		code, err := readResponse(r)
		if err != nil {
			return lat, err
		}
		if code != want {
			return lat, fmt.Errorf("%s answered %d, want %d", bytes.Fields(req)[1], code, want)
		}
		lat = append(lat, time.Since(t0))
	}
}

var errResponse = errors.New("malformed HTTP response")

// readResponse reads one response and returns its status code, discarding
// its body (Content-Length or chunked).
func readResponse(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, errResponse
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, errResponse
	}
	length, chunked := -1, false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, errResponse
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, errResponse
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")) && bytes.EqualFold(v, []byte("chunked")):
			chunked = true
		}
	}
	switch {
	case code == 304 || code == 204:
		return code, nil
	case chunked:
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 32)
			if err != nil {
				return 0, errResponse
			}
			if _, err := r.Discard(int(n) + 2); err != nil {
				return 0, err
			}
			if n == 0 {
				return code, nil
			}
		}
	case length >= 0:
		_, err := r.Discard(length)
		return code, err
	}
	return 0, io.ErrUnexpectedEOF
}

// get returns the body and headers of one GET (setup, not load).
func get(addr, path string, header ...string) (code int, etag string, body []byte, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(request(addr, path, header...)); err != nil {
		return 0, "", nil, err
	}
	r := bufio.NewReader(c)
	resp, err := readFull(r)
	if err != nil {
		return 0, "", nil, err
	}
	return resp.code, resp.etag, resp.body, nil
}

type response struct {
	code int
	etag string
	body []byte
}

// readFull reads one response with net/http's parser, keeping its body.
func readFull(r *bufio.Reader) (response, error) {
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, etag: resp.Header.Get("ETag"), body: body}, err
}

// request is a GET of path from addr with the given extra header lines.
func request(addr, path string, header ...string) []byte {
	b := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n")
	for _, h := range header {
		b = append(b, h...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}
