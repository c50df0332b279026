// Package cdntest is a CloudFront stand-in for tests: an HTTP server that
// speaks the CreateInvalidation part of the CloudFront REST/XML API (2020-05-31),
// so code under test uses the real SDK client against it. It records every
// request and answers from a script of failures, then with success.
package cdntest

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
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

// Server is a fake CloudFront endpoint.
type Server struct {
	*httptest.Server

	mu       sync.Mutex // guards the fields below
	requests []Request
	script   []Failure
	byRef    map[string]string // caller reference → invalidation id
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{byRef: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Fail makes the next calls fail, in order, before calls succeed again.
func (s *Server) Fail(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, f...)
}

// Requests returns the requests received so far.
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

// Client returns a CloudFront client for the server.
func (s *Server) Client() *cloudfront.Client {
	return cloudfront.New(cloudfront.Options{
		BaseEndpoint: aws.String(s.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
}

type invalidationBatch struct {
	XMLName         xml.Name `xml:"InvalidationBatch"`
	CallerReference string   `xml:"CallerReference"`
	Quantity        int      `xml:"Paths>Quantity"`
	Paths           []string `xml:"Paths>Items>Path"`
}

const ns = "http://cloudfront.amazonaws.com/doc/2020-05-31/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// POST /2020-05-31/distribution/{Id}/invalidation
	rest, ok := strings.CutPrefix(r.URL.Path, "/2020-05-31/distribution/")
	id, tail, _ := strings.Cut(rest, "/")
	if !ok || tail != "invalidation" || r.Method != http.MethodPost {
		writeError(w, Failure{Status: http.StatusNotFound, Code: "NoSuchResource"}, "unsupported "+r.Method+" "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, Failure{Status: http.StatusForbidden, Code: "MissingAuthenticationToken"}, "unsigned request")
		return
	}
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
	s.requests = append(s.requests, Request{DistributionID: id, CallerReference: batch.CallerReference, Paths: batch.Paths, Quantity: batch.Quantity})
	var fail *Failure
	if len(s.script) > 0 {
		fail = &s.script[0]
		s.script = s.script[1:]
	}
	invID, seen := s.byRef[batch.CallerReference]
	if fail == nil && !seen {
		invID = fmt.Sprintf("I%013d", len(s.byRef)+1)
		s.byRef[batch.CallerReference] = invID
	}
	s.mu.Unlock()
	if fail != nil {
		writeError(w, *fail, "scripted failure")
		return
	}
	if batch.Quantity != len(batch.Paths) {
		writeError(w, Failure{Status: http.StatusBadRequest, Code: "InconsistentQuantities"}, "quantity does not match paths")
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Location", s.URL+r.URL.Path+"/"+invID)
	w.WriteHeader(http.StatusCreated)
	var items strings.Builder
	for _, p := range batch.Paths {
		items.WriteString("<Path>")
		xml.EscapeText(&items, []byte(p))
		items.WriteString("</Path>")
	}
	var ref strings.Builder
	xml.EscapeText(&ref, []byte(batch.CallerReference))
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Invalidation xmlns="%s"><Id>%s</Id><Status>InProgress</Status><CreateTime>%s</CreateTime><InvalidationBatch><Paths><Quantity>%d</Quantity><Items>%s</Items></Paths><CallerReference>%s</CallerReference></InvalidationBatch></Invalidation>`,
		ns, invID, time.Now().UTC().Format(time.RFC3339), len(batch.Paths), items.String(), ref.String())
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
