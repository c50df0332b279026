package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// JournalHead is the object key of the purge journal's head under the
// product's default JOURNAL_PREFIX.
const JournalHead = "_tilesieve/journal/head.json"

// S3Counts is what one client asked S3, counted at the HTTP level.
type S3Counts struct {
	JournalGET200    int           `json:"journal_get_200"`     // head read with new content
	JournalGET304    int           `json:"journal_get_304"`     // head unchanged (If-None-Match)
	JournalGETFailed int           `json:"journal_get_failed"`  // any other answer, or the client gave up first
	JournalGETGaveUp int           `json:"journal_get_gave_up"` // of those, the client gave up first
	JournalBytes     int64         `json:"journal_bytes"`       // body bytes of head reads
	JournalTime      time.Duration `json:"journal_time"`        // time the endpoint spent on head reads
	TileGET200       int           `json:"tile_get_200"`
	TileGET304       int           `json:"tile_get_304"` // revalidations that found the copy current
	TileOther        int           `json:"tile_other"`   // tile requests with any other method or answer
	Puts             int           `json:"puts"`
	Other            int           `json:"other"`
}

// Total is every request counted.
func (c S3Counts) Total() int {
	return c.JournalGET200 + c.JournalGET304 + c.JournalGETFailed + c.TileGET200 + c.TileGET304 + c.TileOther + c.Puts + c.Other
}

// JournalGETs is every read of the journal head.
func (c S3Counts) JournalGETs() int { return c.JournalGET200 + c.JournalGET304 + c.JournalGETFailed }

// Sub is c minus an earlier snapshot o.
func (c S3Counts) Sub(o S3Counts) S3Counts {
	return S3Counts{
		JournalGET200: c.JournalGET200 - o.JournalGET200, JournalGET304: c.JournalGET304 - o.JournalGET304,
		JournalGETFailed: c.JournalGETFailed - o.JournalGETFailed, JournalGETGaveUp: c.JournalGETGaveUp - o.JournalGETGaveUp, JournalBytes: c.JournalBytes - o.JournalBytes,
		JournalTime: c.JournalTime - o.JournalTime, TileGET200: c.TileGET200 - o.TileGET200, TileGET304: c.TileGET304 - o.TileGET304,
		TileOther: c.TileOther - o.TileOther, Puts: c.Puts - o.Puts, Other: c.Other - o.Other,
	}
}

// S3Counter is a loopback front of its own before the shared endpoint: one
// client (one instance, or the worker) talks to it, and it counts that
// client's requests by kind and answer.
type S3Counter struct {
	srv *httptest.Server

	mu sync.Mutex // guards c
	c  S3Counts
}

// NewS3Counter serves next (the endpoint's handler) on a new port.
func NewS3Counter(next http.Handler) *S3Counter {
	s := &S3Counter{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request is counted when its status is written, before the client
		// can have the answer: a caller that reads the counts right after
		// its request sees it. Bytes and time are added when it ends.
		rec := &statusWriter{ResponseWriter: w, onHeader: func(code int) { s.count(r, code) }}
		start := time.Now()
		next.ServeHTTP(rec, r)
		if rec.code == 0 {
			code := 0 // the client gave up before an answer
			if r.Context().Err() == nil {
				code = http.StatusOK
			}
			s.count(r, code)
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+JournalHead) {
			s.mu.Lock()
			s.c.JournalTime += time.Since(start)
			s.c.JournalBytes += rec.bytes
			s.mu.Unlock()
		}
	}))
	return s
}

// URL is the front's base URL.
func (s *S3Counter) URL() string { return s.srv.URL }

// Close stops the front.
func (s *S3Counter) Close() { s.srv.Close() }

// Counts is a snapshot of the counts.
func (s *S3Counter) Counts() S3Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

func (s *S3Counter) count(r *http.Request, code int) {
	journal := strings.HasSuffix(r.URL.Path, "/"+JournalHead)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.c
	switch {
	case r.Method == http.MethodPut:
		c.Puts++
	case journal && r.Method == http.MethodGet:
		switch code {
		case http.StatusOK:
			c.JournalGET200++
		case http.StatusNotModified:
			c.JournalGET304++
		case 0:
			c.JournalGETFailed++
			c.JournalGETGaveUp++
		default:
			c.JournalGETFailed++
		}
	case journal:
		c.Other++
	case r.Method == http.MethodGet && code == http.StatusOK, r.Method == http.MethodGet && code == http.StatusPartialContent:
		c.TileGET200++
	case r.Method == http.MethodGet && code == http.StatusNotModified:
		c.TileGET304++
	case strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/") >= 1:
		c.TileOther++ // an object request: HEAD, a 404, a failure
	default:
		c.Other++ // bucket-level: ListObjectsV2, …
	}
}

// statusWriter records the status and body size of a response.
type statusWriter struct {
	http.ResponseWriter
	onHeader func(code int)
	code     int
	bytes    int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		w.onHeader(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
		w.onHeader(w.code)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}
