package awsclient_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestS3LogsNoLineARead: reading an object that carries no checksum (one
// uploaded without, or any byte range of an archive) writes nothing to the
// SDK's logger, whose default off Lambda is the process's stderr: a line
// per tile read would bury the service's own logs and bill for them.
func TestS3LogsNoLineARead(t *testing.T) {
	e := s3localtest.Start(t, "tiles")
	s3localtest.Put(t, e.Client, "tiles", "k", []byte("0123456789"), "text/plain", "")
	s3localtest.IsolateEnv(t)
	s3localtest.EnvCredentials(t)
	cfg, err := awsclient.Load(context.Background(), awsclient.Settings{Region: s3local.DefaultRegion})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	cfg.Logger = logging.NewStandardLogger(&logged)
	c := awsclient.S3(cfg, e.URL, true)
	for _, rng := range []string{"", "bytes=2-5"} {
		in := &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k")}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := c.GetObject(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(out.Body); err != nil {
			t.Fatal(err)
		}
		_ = out.Body.Close()
	}
	if s := logged.String(); s != "" {
		t.Errorf("the SDK logged on reads:\n%s", strings.TrimSpace(s))
	}
}
