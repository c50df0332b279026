package s3local_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/s3local"
	"github.com/tilesieve/tilesieve/shared/s3local/s3localtest"
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
