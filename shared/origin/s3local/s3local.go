// Package s3local is an S3-compatible endpoint that runs in process: the
// rclone/gofakes3 server over an in-memory backend, with SigV4 authentication
// on, so clients speak to it through aws-sdk-go-v2 exactly as they speak to S3.
//
// It serves `make run` (the embedded stack) and the tests. On top of S3 it can
// inject faults and first-byte latency (Faults), which is how the tests show
// what the tile function does when S3 is slow, failing or cut short.
//
// Conditional writes are honoured as S3 honours them: a PUT with
// If-None-Match: * of an existing key, or with an If-Match that does not
// match, is refused with 412, atomically with the write. With
// IgnoreWriteConditions the endpoint instead accepts those headers and
// ignores them, as several S3-compatible stores do, so that tests can show
// what a client does against such a store.
package s3local

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
	"github.com/rclone/gofakes3/signature"
)

// Default credentials and region of a local endpoint. They are not secrets:
// the endpoint only checks that requests are signed with them.
const (
	DefaultAccessKey = "tilesieve"
	DefaultSecretKey = "tilesieve-local-secret"
	DefaultRegion    = "us-east-1"
)

// Config configures a local endpoint.
type Config struct {
	Buckets   []string // created at start
	AccessKey string   // default DefaultAccessKey
	SecretKey string   // default DefaultSecretKey
	// IgnoreWriteConditions makes the endpoint accept If-Match and
	// If-None-Match on PUT and POST and ignore them: every such write
	// succeeds, as on a store without conditional writes. The setting can
	// be changed later with SetIgnoreWriteConditions.
	IgnoreWriteConditions bool
}

// Server is a local S3 endpoint. Serve its Handler with net/http or
// httptest.NewServer.
type Server struct {
	cfg     Config
	backend *s3mem.Backend
	handler http.Handler
	faults  *Faults
	ignore  atomic.Bool // conditions on writes are ignored
}

// New creates the endpoint and its buckets.
func New(cfg Config) (*Server, error) {
	if cfg.AccessKey == "" {
		cfg.AccessKey = DefaultAccessKey
	}
	if cfg.SecretKey == "" {
		cfg.SecretKey = DefaultSecretKey
	}
	backend := s3mem.New()
	for _, b := range cfg.Buckets {
		if err := backend.CreateBucket(context.Background(), b); err != nil {
			return nil, fmt.Errorf("s3local: create bucket %q: %w", b, err)
		}
	}
	fake := gofakes3.New(backend,
		gofakes3.WithV4Auth(map[string]string{cfg.AccessKey: cfg.SecretKey}),
		gofakes3.WithAutoBucket(false),
		gofakes3.WithLogger(gofakes3.DiscardLog()),
	)
	// The same backend without authentication, for the writes whose
	// conditions are ignored: their signature is checked before their
	// conditions are removed (removing a signed header would void it).
	unsigned := gofakes3.New(backend,
		gofakes3.WithAutoBucket(false),
		gofakes3.WithLogger(gofakes3.DiscardLog()),
	)
	s := &Server{cfg: cfg, backend: backend, faults: &Faults{}}
	s.ignore.Store(cfg.IgnoreWriteConditions)
	s.handler = s.faults.wrap(serialiseWrites(s.conditions(fake.Server(), unsigned.Server())))
	return s, nil
}

// SetIgnoreWriteConditions turns the ignoring of conditional writes on or
// off (see Config.IgnoreWriteConditions).
func (s *Server) SetIgnoreWriteConditions(ignore bool) { s.ignore.Store(ignore) }

// conditions sends a signed conditional write to unsigned with its
// conditions removed when they are to be ignored, and every other request
// to signed.
func (s *Server) conditions(signed, unsigned http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.ignore.Load() && (r.Method == http.MethodPut || r.Method == http.MethodPost) &&
			(r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "") &&
			signature.V4SignVerifyWithLookup(r, s.lookupKey) == signature.ErrNone {
			r = r.Clone(r.Context())
			r.Header.Del("If-Match")
			r.Header.Del("If-None-Match")
			unsigned.ServeHTTP(w, r)
			return
		}
		signed.ServeHTTP(w, r)
	})
}

func (s *Server) lookupKey(accessKey string) (string, bool) {
	return s.cfg.SecretKey, accessKey == s.cfg.AccessKey
}

// serialiseWrites makes each write of one key atomic with its conditions.
// gofakes3 checks If-None-Match / If-Match and then writes as two steps, so
// two racing create-only PUTs of one key could both succeed, where S3 lets
// exactly one win (the purge journal relies on that). Writes of one path take
// one of a set of striped locks; writes of different keys still run at once.
func serialiseWrites(next http.Handler) http.Handler {
	var stripes [64]sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodDelete {
			mu := &stripes[maphash.String(writeSeed, r.URL.Path)%uint64(len(stripes))]
			mu.Lock()
			defer mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

var writeSeed = maphash.MakeSeed()

// Handler serves the S3 API, with any configured faults applied first.
func (s *Server) Handler() http.Handler { return s.handler }

// Faults is the fault injector in front of the endpoint.
func (s *Server) Faults() *Faults { return s.faults }

// Credentials returns the static credentials the endpoint accepts.
func (s *Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.cfg.AccessKey, s.cfg.SecretKey, "")
}

// Client returns an SDK client for the endpoint at url (path-style, SigV4,
// the default region). It is for seeding and checking objects; the product
// builds its own client in shared/origin from the environment.
func (s *Server) Client(url string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(url),
		Region:       DefaultRegion,
		Credentials:  s.Credentials(),
		UsePathStyle: true,
		// The local endpoint does not need the newer request checksums; keeping
		// them "when required" matches what most S3-compatible stores accept.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// Put stores an object (a convenience for seeding).
func Put(ctx context.Context, c *s3.Client, bucket, key string, body []byte, contentType, contentEncoding string) (etag string, err error) {
	in := &s3.PutObjectInput{
		Bucket:      aws.String(bucket),
		Key:         aws.String(key),
		Body:        bytesReader(body),
		ContentType: aws.String(contentType),
	}
	if contentEncoding != "" {
		in.ContentEncoding = aws.String(contentEncoding)
	}
	out, err := c.PutObject(ctx, in)
	if err != nil {
		return "", fmt.Errorf("s3local: put %s/%s: %w", bucket, key, err)
	}
	return aws.ToString(out.ETag), nil
}

// ErrInjected is the error class of responses the fault injector made up.
var ErrInjected = errors.New("s3local: injected fault")
