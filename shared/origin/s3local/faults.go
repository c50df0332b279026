package s3local

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func bytesReader(b []byte) io.ReadSeeker { return bytes.NewReader(b) }

// Fault is one rule of the injector. A request that matches an active rule is
// treated as the rule says instead of (or on the way to) the real endpoint.
type Fault struct {
	// Match selects the requests the rule applies to; nil matches every request.
	Match func(*http.Request) bool
	// Times is how many matching requests the rule applies to; 0 is no limit.
	Times int
	// Status, when set, answers with this status and an S3 XML error body
	// without reaching the endpoint (500 InternalError, 503 SlowDown, ...).
	Status int
	// Delay holds the response back before its first byte (a slow or hung S3);
	// it ends early if the client gives up.
	Delay time.Duration
	// TruncateAfter, when > 0, sends that many body bytes of the real response
	// and then drops the connection, as a reset mid-body does.
	TruncateAfter int
	// SlowBody, when > 0, sleeps this long before each 4 KiB of the body.
	SlowBody time.Duration
	// Hold, when set, is called once the endpoint has produced its whole
	// response and before any of it is sent: S3 has answered, and the answer
	// is still on its way when Hold returns. Tests use it to change the
	// bucket between the moment S3 read an object and the moment the
	// client receives it.
	Hold func()
}

// Faults injects faults and latency in front of the endpoint. Its zero value
// injects nothing. Safe for concurrent use.
type Faults struct {
	latency atomic.Int64 // first-byte latency added to every request, in ns

	mu    sync.Mutex // guards rules and used
	rules []*Fault
	used  map[*Fault]int
}

// SetLatency adds d before the first byte of every response (0 turns it off).
// Benchmarks use it to stand for S3's real first-byte latency.
func (f *Faults) SetLatency(d time.Duration) { f.latency.Store(int64(d)) }

// Add installs a rule; rules are tried in the order they were added.
func (f *Faults) Add(rule Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := rule
	f.rules = append(f.rules, &r)
}

// Reset removes every rule and the latency.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.used = nil, nil
	f.latency.Store(0)
}

// take returns the first active rule matching r and counts its use.
func (f *Faults) take(r *http.Request) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rule := range f.rules {
		if rule.Match != nil && !rule.Match(r) {
			continue
		}
		if rule.Times > 0 && f.used[rule] >= rule.Times {
			continue
		}
		if f.used == nil {
			f.used = map[*Fault]int{}
		}
		f.used[rule]++
		return rule
	}
	return nil
}

// MatchGet matches GET requests whose path contains substr.
func MatchGet(substr string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, substr)
	}
}

func (f *Faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(f.latency.Load()); d > 0 && !sleep(r, d) {
			return
		}
		rule := f.take(r)
		if rule == nil {
			next.ServeHTTP(w, r)
			return
		}
		if rule.Delay > 0 && !sleep(r, rule.Delay) {
			return
		}
		if rule.Status != 0 {
			writeError(w, rule.Status)
			return
		}
		if rule.Hold != nil {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			rule.Hold()
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		if rule.TruncateAfter > 0 || rule.SlowBody > 0 {
			w = &faultWriter{ResponseWriter: w, r: r, rule: rule}
		}
		next.ServeHTTP(w, r)
	})
}

// sleep waits d or until the client goes away; false means it went away.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func writeError(w http.ResponseWriter, status int) {
	code := "InternalError"
	switch status {
	case http.StatusServiceUnavailable:
		code = "SlowDown"
	case http.StatusForbidden:
		code = "AccessDenied"
	case http.StatusNotFound:
		code = "NoSuchKey"
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s (%v)</Message></Error>`,
		code, http.StatusText(status), ErrInjected)
}

// faultWriter cuts or slows the body of a real response.
type faultWriter struct {
	http.ResponseWriter
	r       *http.Request
	rule    *Fault
	written int
}

func (w *faultWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p
		if len(chunk) > 4096 {
			chunk = chunk[:4096]
		}
		if w.rule.TruncateAfter > 0 && w.written+len(chunk) > w.rule.TruncateAfter {
			chunk = chunk[:w.rule.TruncateAfter-w.written]
			if len(chunk) > 0 {
				w.ResponseWriter.Write(chunk)
			}
			if fl, ok := w.ResponseWriter.(http.Flusher); ok {
				fl.Flush()
			}
			// Abort: net/http drops the connection without finishing the body,
			// so the client sees fewer bytes than Content-Length promised.
			panic(http.ErrAbortHandler)
		}
		if w.rule.SlowBody > 0 {
			if fl, ok := w.ResponseWriter.(http.Flusher); ok {
				fl.Flush()
			}
			if !sleep(w.r, w.rule.SlowBody) {
				return n, w.r.Context().Err()
			}
		}
		m, err := w.ResponseWriter.Write(chunk)
		n += m
		w.written += m
		if err != nil {
			return n, err
		}
		p = p[len(chunk):]
	}
	return n, nil
}

func (w *faultWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}
