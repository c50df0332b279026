package s3localtest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// fatalTB records a Fatal and unwinds the call with a panic the test
// recovers, where testing.T would end the test.
type fatalTB struct {
	testing.TB
	fataled bool
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.fataled = true
	panic(f)
}

// TestPut: Put stores the body with its types and returns the ETag S3
// gives; a put S3 refuses fails the test.
func TestPut(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, "tiles")
	etag := s3localtest.Put(t, ep.Client, "tiles", "a/0/0/0.png", []byte("png"), "image/png", "gzip")
	h, err := ep.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("tiles"), Key: aws.String("a/0/0/0.png")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ETag) != etag || etag == "" || aws.ToString(h.ContentType) != "image/png" || aws.ToString(h.ContentEncoding) != "gzip" || aws.ToInt64(h.ContentLength) != 3 {
		t.Errorf("got ETag %q (Put returned %q), type %q, encoding %q, %d bytes", aws.ToString(h.ETag), etag, aws.ToString(h.ContentType), aws.ToString(h.ContentEncoding), aws.ToInt64(h.ContentLength))
	}
	ep.Faults().Add(s3local.Fault{Status: http.StatusForbidden})
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != f {
				panic(r)
			}
		}()
		s3localtest.Put(f, ep.Client, "tiles", "b/0/0/0.png", []byte("x"), "image/png", "")
	}()
	if !f.fataled {
		t.Error("a refused put did not fail the test")
	}
}
