// Package cdntest is a CloudFront stand-in for tests: an HTTP server that
// speaks the invalidation part of the CloudFront REST/XML API (2020-05-31:
// CreateInvalidation, ListInvalidations, GetInvalidation), so code under test
// uses the real SDK client against it. It records every request, answers
// CreateInvalidation from a script of failures, then with success, and keeps
// the invalidations it made: each is InProgress until its time has passed on
// the server's clock (or Complete says so), and a CreateInvalidation that
// would put more paths in progress than CloudFront allows is refused with
// TooManyInvalidationsInProgress, as CloudFront does.
//
// With Options.Apply the server stands in for a real cache: each created
// invalidation is handed to Apply (a Varnish ban, say), and it is reported
// Completed only once Apply has succeeded, so a caller that waits for
// Completed knows the cache no longer serves what it invalidated.
package cdntest

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
)

// Request is one CreateInvalidation the server received.
type Request struct {
	DistributionID  string
	CallerReference string
	Paths           []string
	Quantity        int
}

// Failure is a scripted error answer.
type Failure struct {
	Status int    // 400 for TooManyInvalidationsInProgress and Throttling, 503, ...
	Code   string // "TooManyInvalidationsInProgress", "Throttling", "ServiceUnavailable", ...
}

// Common failures.
var (
	TooMany     = Failure{Status: http.StatusBadRequest, Code: "TooManyInvalidationsInProgress"}
	Throttling  = Failure{Status: http.StatusBadRequest, Code: "Throttling"}
	Unavailable = Failure{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable"}
	BadPath     = Failure{Status: http.StatusBadRequest, Code: "InvalidArgument"}
)

// CloudFront's quotas of paths in progress per distribution.
const (
	MaxWildcardPaths = 15
	MaxExactPaths    = 3000
)

// Options configure a Server.
type Options struct {
	// Now is the server's clock; default time.Now. Tests hand it a
	// fakeclock's Now so that invalidations complete when the test says.
	Now func() time.Time
	// CompleteAfter is how long an invalidation stays InProgress; 0
	// completes it as soon as the clock moves past its creation, so a
	// created invalidation is InProgress in its own answer only.
	CompleteAfter time.Duration
	// Manual keeps every invalidation InProgress until Complete or
	// CompleteAll, whatever the clock says.
	Manual bool
	// MaxWildcardPaths and MaxExactPaths are the limits of paths in
	// progress; defaults CloudFront's 15 and 3,000.
	MaxWildcardPaths int
	MaxExactPaths    int
	// Apply, when set, applies each created invalidation to a cache. It is
	// called once per invalidation, outside the request that created it
	// (CloudFront answers InProgress at once and purges afterwards), and
	// again after a short wait when it fails; the invalidation stays
	// InProgress until a call succeeds, whatever the clock, Complete or
	// CompleteAll say. ctx ends when the server closes.
	Apply func(ctx context.Context, id string, paths []string) error
}

// Usage counts paths in progress, as cdn counts them.
type Usage = cdn.Usage

// Server is a fake CloudFront endpoint.
type Server struct {
	*httptest.Server
	opts Options

	mu       sync.Mutex // guards the fields below
	requests []Request
	script   []Failure
	byRef    map[string]*invalidation // caller reference → invalidation
	all      []*invalidation          // in creation order
	calls    map[string]int           // operation → calls
	refused  int                      // creates refused for the limits
	peak     Usage                    // most paths in progress at once
	applyErr []error                  // failed Apply calls, in order

	applyCtx  context.Context // ends when the server closes
	stopApply context.CancelFunc
	applying  sync.WaitGroup // Apply goroutines
}

type invalidation struct {
	id, dist, ref string
	paths         []string
	created       time.Time
	done          bool // completed explicitly
	applied       bool // Options.Apply succeeded, or there is none
}

// New starts a server with default Options; it is closed when the test ends.
func New(t testing.TB) *Server { return NewWithOptions(t, Options{}) }

// NewWithOptions starts a server; it is closed when the test ends.
func NewWithOptions(t testing.TB, opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxWildcardPaths <= 0 {
		opts.MaxWildcardPaths = MaxWildcardPaths
	}
	if opts.MaxExactPaths <= 0 {
		opts.MaxExactPaths = MaxExactPaths
	}
	s := &Server{opts: opts, byRef: map[string]*invalidation{}, calls: map[string]int{}}
	s.applyCtx, s.stopApply = context.WithCancel(context.Background())
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and the Apply calls in flight, and waits for them.
func (s *Server) Close() {
	s.Server.Close()
	s.stopApply()
	s.applying.Wait()
}

// ApplyErrors returns the errors of the failed Apply calls so far.
func (s *Server) ApplyErrors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.applyErr...)
}

// applyRetry is the wait before Apply is called again after a failure.
const applyRetry = 20 * time.Millisecond

// apply hands inv to Options.Apply until it succeeds or the server closes,
// then marks it applied.
func (s *Server) apply(inv *invalidation) {
	defer s.applying.Done()
	for {
		err := s.opts.Apply(s.applyCtx, inv.id, slices.Clone(inv.paths))
		if err == nil {
			s.mu.Lock()
			inv.applied = true
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.applyErr = append(s.applyErr, fmt.Errorf("cdntest: apply invalidation %s: %w", inv.id, err))
		s.mu.Unlock()
		t := time.NewTimer(applyRetry)
		select {
		case <-s.applyCtx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Fail makes the next CreateInvalidation calls fail, in order, before calls
// succeed again.
func (s *Server) Fail(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, f...)
}

// Requests returns the CreateInvalidation requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Invalidations is how many distinct invalidations were created (calls with
// a caller reference seen before create none, as in CloudFront).
func (s *Server) Invalidations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byRef)
}

// Calls is how many requests of an operation ("CreateInvalidation",
// "ListInvalidations", "GetInvalidation") the server answered.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Refused is how many CreateInvalidation calls were refused because they
// would have exceeded the limits of paths in progress.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// InProgress counts the paths of the invalidations in progress now.
func (s *Server) InProgress() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usageLocked()
}

// Peak is the most paths that were in progress at any moment.
func (s *Server) Peak() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// CompleteAll marks every invalidation completed.
func (s *Server) CompleteAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, inv := range s.all {
		inv.done = true
	}
}

// Client returns a CloudFront client for the server.
func (s *Server) Client() *cloudfront.Client {
	return cloudfront.New(cloudfront.Options{
		BaseEndpoint: aws.String(s.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
}

func (s *Server) inProgressLocked(inv *invalidation) bool {
	if !inv.applied {
		return true
	}
	if inv.done {
		return false
	}
	if s.opts.Manual {
		return true
	}
	return s.opts.Now().Before(inv.created.Add(s.opts.CompleteAfter)) || s.opts.CompleteAfter == 0 && !s.opts.Now().After(inv.created)
}

func (s *Server) usageLocked() Usage {
	var u Usage
	for _, inv := range s.all {
		if s.inProgressLocked(inv) {
			u = u.Add(cdn.Count(inv.paths))
		}
	}
	return u
}

type invalidationBatch struct {
	XMLName         xml.Name `xml:"InvalidationBatch"`
	CallerReference string   `xml:"CallerReference"`
	Quantity        int      `xml:"Paths>Quantity"`
	Paths           []string `xml:"Paths>Items>Path"`
}

const ns = "http://cloudfront.amazonaws.com/doc/2020-05-31/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// /2020-05-31/distribution/{Id}/invalidation[/{InvalidationId}]
	rest, ok := strings.CutPrefix(r.URL.Path, "/2020-05-31/distribution/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 2 || len(parts) > 3 || parts[1] != "invalidation" {
		writeError(w, Failure{Status: http.StatusNotFound, Code: "NoSuchResource"}, "unsupported "+r.Method+" "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, Failure{Status: http.StatusForbidden, Code: "MissingAuthenticationToken"}, "unsigned request")
		return
	}
	dist := parts[0]
	switch {
	case len(parts) == 2 && r.Method == http.MethodPost:
		s.create(w, r, dist)
	case len(parts) == 2 && r.Method == http.MethodGet:
		s.list(w, r, dist)
	case len(parts) == 3 && r.Method == http.MethodGet:
		s.get(w, dist, parts[2])
	default:
		writeError(w, Failure{Status: http.StatusNotFound, Code: "NoSuchResource"}, "unsupported "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, dist string) {
	body, err := io.ReadAll(r.Body)
	var batch invalidationBatch
	if err == nil {
		err = xml.Unmarshal(body, &batch)
	}
	if err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Code: "MalformedInput"}, err.Error())
		return
	}
	s.mu.Lock()
	s.calls["CreateInvalidation"]++
	s.requests = append(s.requests, Request{DistributionID: dist, CallerReference: batch.CallerReference, Paths: batch.Paths, Quantity: batch.Quantity})
	var fail *Failure
	if len(s.script) > 0 {
		fail = &s.script[0]
		s.script = s.script[1:]
	}
	inv, seen := s.byRef[batch.CallerReference]
	var msg string
	switch {
	case fail != nil:
		msg = "scripted failure"
	case batch.Quantity != len(batch.Paths):
		fail, msg = &Failure{Status: http.StatusBadRequest, Code: "InconsistentQuantities"}, "quantity does not match paths"
	case seen:
		// CloudFront answers a repeated caller reference with the
		// invalidation it made, and creates nothing.
	default:
		now, want := s.usageLocked(), cdn.Count(batch.Paths)
		if now.Wildcard+want.Wildcard > s.opts.MaxWildcardPaths || now.Exact+want.Exact > s.opts.MaxExactPaths {
			s.refused++
			fail = &TooMany
			msg = fmt.Sprintf("%d wildcard and %d exact paths in progress, %d and %d more asked", now.Wildcard, now.Exact, want.Wildcard, want.Exact)
			break
		}
		inv = &invalidation{
			id: fmt.Sprintf("I%013d", len(s.all)+1), dist: dist, ref: batch.CallerReference,
			paths: batch.Paths, created: s.opts.Now(),
		}
		s.byRef[batch.CallerReference] = inv
		s.all = append(s.all, inv)
		after := now.Add(want)
		s.peak = Usage{Wildcard: max(s.peak.Wildcard, after.Wildcard), Exact: max(s.peak.Exact, after.Exact)}
	}
	var doc string
	if fail == nil {
		doc = s.invalidationXMLLocked(inv, true)
	}
	if fail == nil && !seen {
		// Made by this call: applied already when there is nothing to apply.
		inv.applied = s.opts.Apply == nil
		if !inv.applied {
			s.applying.Add(1)
			go s.apply(inv)
		}
	}
	s.mu.Unlock()
	if fail != nil {
		writeError(w, *fail, msg)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Location", s.URL+r.URL.Path+"/"+inv.id)
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, doc)
}

// invalidationXMLLocked renders an Invalidation document; fresh is true in
// the answer to its creation, which CloudFront always gives as InProgress.
func (s *Server) invalidationXMLLocked(inv *invalidation, fresh bool) string {
	var items strings.Builder
	for _, p := range inv.paths {
		items.WriteString("<Path>")
		xml.EscapeText(&items, []byte(p))
		items.WriteString("</Path>")
	}
	var ref strings.Builder
	xml.EscapeText(&ref, []byte(inv.ref))
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Invalidation xmlns="%s"><Id>%s</Id><Status>%s</Status><CreateTime>%s</CreateTime><InvalidationBatch><Paths><Quantity>%d</Quantity><Items>%s</Items></Paths><CallerReference>%s</CallerReference></InvalidationBatch></Invalidation>`,
		ns, inv.id, s.statusLocked(inv, fresh), inv.created.UTC().Format(time.RFC3339), len(inv.paths), items.String(), ref.String())
}

func (s *Server) statusLocked(inv *invalidation, fresh bool) string {
	if fresh && !inv.done || s.inProgressLocked(inv) {
		return "InProgress"
	}
	return "Completed"
}

func (s *Server) get(w http.ResponseWriter, dist, id string) {
	s.mu.Lock()
	s.calls["GetInvalidation"]++
	var doc string
	for _, inv := range s.all {
		if inv.id == id && inv.dist == dist {
			doc = s.invalidationXMLLocked(inv, false)
		}
	}
	s.mu.Unlock()
	if doc == "" {
		writeError(w, Failure{Status: http.StatusNotFound, Code: "NoSuchInvalidation"}, "no invalidation "+id)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	io.WriteString(w, doc)
}

// list answers ListInvalidations newest first, MaxItems (default 100) a
// page, a page after Marker (an invalidation id) starting after it.
func (s *Server) list(w http.ResponseWriter, r *http.Request, dist string) {
	q := r.URL.Query()
	maxItems := 100
	if v := q.Get("MaxItems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, Failure{Status: http.StatusBadRequest, Code: "InvalidArgument"}, "bad MaxItems")
			return
		}
		maxItems = min(n, 100)
	}
	marker := q.Get("Marker")
	s.mu.Lock()
	s.calls["ListInvalidations"]++
	var mine []*invalidation
	for _, inv := range s.all {
		if inv.dist == dist {
			mine = append(mine, inv)
		}
	}
	slices.Reverse(mine)
	start := 0
	if marker != "" {
		start = len(mine)
		for i, inv := range mine {
			if inv.id == marker {
				start = i + 1
			}
		}
	}
	page := mine[start:]
	truncated := len(page) > maxItems
	if truncated {
		page = page[:maxItems]
	}
	var items strings.Builder
	for _, inv := range page {
		fmt.Fprintf(&items, "<InvalidationSummary><Id>%s</Id><CreateTime>%s</CreateTime><Status>%s</Status></InvalidationSummary>",
			inv.id, inv.created.UTC().Format(time.RFC3339), s.statusLocked(inv, false))
	}
	next := ""
	if truncated {
		next = "<NextMarker>" + page[len(page)-1].id + "</NextMarker>"
	}
	s.mu.Unlock()
	var m strings.Builder
	xml.EscapeText(&m, []byte(marker))
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<InvalidationList xmlns="%s"><Marker>%s</Marker>%s<MaxItems>%d</MaxItems><IsTruncated>%t</IsTruncated><Quantity>%d</Quantity><Items>%s</Items></InvalidationList>`,
		ns, m.String(), next, maxItems, truncated, len(page), items.String())
}

func writeError(w http.ResponseWriter, f Failure, msg string) {
	typ := "Sender"
	if f.Status >= 500 {
		typ = "Receiver"
	}
	var m strings.Builder
	xml.EscapeText(&m, []byte(msg))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>4f8e2c1a-0b3d-4e5f-8a9b-0c1d2e3f4a5b</RequestId></ErrorResponse>`,
		ns, typ, f.Code, m.String())
}
