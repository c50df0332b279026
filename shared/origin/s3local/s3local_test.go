package s3local_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

func start(t *testing.T) (*s3local.Server, *s3.Client) {
	t.Helper()
	e := s3localtest.Start(t, "tiles")
	return e.Server, e.Client
}

func TestRoundTripSigned(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := context.Background()
	body := []byte("png bytes")
	etag, err := s3local.Put(ctx, c, "tiles", "osm/1/0/0.png", body, "image/png", "")
	if err != nil {
		t.Fatal(err)
	}
	if etag == "" {
		t.Fatal("no ETag")
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("osm/1/0/0.png")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != string(body) || aws.ToString(out.ContentType) != "image/png" {
		t.Fatalf("got %q %q, want %q image/png", got, aws.ToString(out.ContentType), body)
	}

	// A client with the wrong secret is refused: SigV4 is really checked.
	bad := s3.New(s3.Options{
		BaseEndpoint: c.Options().BaseEndpoint,
		Region:       s3local.DefaultRegion,
		Credentials:  credentials.NewStaticCredentialsProvider(s3local.DefaultAccessKey, "wrong", ""),
		UsePathStyle: true,
	})
	_, err = bad.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("osm/1/0/0.png")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("wrong secret: got %v, want an API error", err)
	}
}

func TestFaultStatusAndTimes(t *testing.T) {
	t.Parallel()
	srv, c := start(t)
	ctx := context.Background()
	if _, err := s3local.Put(ctx, c, "tiles", "a", []byte("x"), "text/plain", ""); err != nil {
		t.Fatal(err)
	}
	srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/a"), Status: http.StatusServiceUnavailable, Times: 1})
	// The SDK's own retryer retries the 503 once and then succeeds.
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("a")})
	if err != nil {
		t.Fatalf("after one injected 503: %v", err)
	}
	out.Body.Close()
}

func TestFaultTruncate(t *testing.T) {
	t.Parallel()
	srv, c := start(t)
	ctx := context.Background()
	body := make([]byte, 64<<10)
	if _, err := s3local.Put(ctx, c, "tiles", "big", body, "application/octet-stream", ""); err != nil {
		t.Fatal(err)
	}
	srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/big"), TruncateAfter: 1000})
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err == nil {
		t.Fatalf("truncated body read %d bytes with no error", len(got))
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	srv, c := start(t)
	srv.Faults().SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("tiles"), Key: aws.String("a")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
}

// TestConditionalWrites: by default a conditional PUT is refused with 412
// when its condition fails, as on S3; with IgnoreWriteConditions every one
// succeeds, and still only when it is signed.
func TestConditionalWrites(t *testing.T) {
	t.Parallel()
	const wrongETag = `"00000000000000000000000000000000"`
	tests := []struct {
		name        string
		ifMatch     string // "current": the ETag of the object as stored
		ifNoneMatch string
		existing    bool
		honoured    int // status when conditions are honoured
	}{
		{"create-only on a new key", "", "*", false, http.StatusOK},
		{"create-only on an existing key", "", "*", true, http.StatusPreconditionFailed},
		{"If-Match with the current ETag", "current", "", true, http.StatusOK},
		{"If-Match with a wrong ETag", wrongETag, "", true, http.StatusPreconditionFailed},
		{"If-Match on a missing key", wrongETag, "", false, http.StatusNotFound},
	}
	for _, ignore := range []bool{false, true} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("ignore=%v/%s", ignore, tc.name), func(t *testing.T) {
				t.Parallel()
				e := s3localtest.StartConfig(t, s3local.Config{Buckets: []string{"tiles"}, IgnoreWriteConditions: ignore})
				ctx := context.Background()
				current := ""
				if tc.existing {
					var err error
					if current, err = s3local.Put(ctx, e.Client, "tiles", "k", []byte("old"), "text/plain", ""); err != nil {
						t.Fatal(err)
					}
				}
				in := &s3.PutObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k"), Body: strings.NewReader("new")}
				switch tc.ifMatch {
				case "":
				case "current":
					in.IfMatch = aws.String(current)
				default:
					in.IfMatch = aws.String(tc.ifMatch)
				}
				if tc.ifNoneMatch != "" {
					in.IfNoneMatch = aws.String(tc.ifNoneMatch)
				}
				_, err := e.Client.PutObject(ctx, in)
				want, wantBody := tc.honoured, "new"
				if ignore {
					want = http.StatusOK
				}
				if want != http.StatusOK {
					wantBody = "old"
				}
				if got := statusOf(err); got != want {
					t.Fatalf("PUT: got status %d (%v), want %d", got, err, want)
				}
				out, err := e.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k")})
				if !tc.existing && want != http.StatusOK {
					if statusOf(err) != http.StatusNotFound {
						t.Fatalf("GET after a refused create: got %v, want 404", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(out.Body)
				out.Body.Close()
				if string(body) != wantBody {
					t.Errorf("object: got %q, want %q", body, wantBody)
				}
			})
		}
	}
}

// TestIgnoredConditionsStillSigned: a conditional write with a bad
// signature is refused in the ignoring mode too.
func TestIgnoredConditionsStillSigned(t *testing.T) {
	t.Parallel()
	e := s3localtest.StartConfig(t, s3local.Config{Buckets: []string{"tiles"}, IgnoreWriteConditions: true})
	bad := s3.New(s3.Options{
		BaseEndpoint: aws.String(e.URL),
		Region:       s3local.DefaultRegion,
		Credentials:  credentials.NewStaticCredentialsProvider(s3local.DefaultAccessKey, "wrong", ""),
		UsePathStyle: true,
	})
	_, err := bad.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("tiles"), Key: aws.String("k"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*"),
	})
	if got := statusOf(err); got != http.StatusForbidden {
		t.Fatalf("badly signed conditional PUT: got status %d (%v), want 403", got, err)
	}
	if _, err := e.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k")}); statusOf(err) != http.StatusNotFound {
		t.Errorf("object after a refused PUT: got %v, want 404", err)
	}
}

// statusOf is the HTTP status of an SDK call's error, 200 for none.
func statusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return -1
}
