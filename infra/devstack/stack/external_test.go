package stack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestExternalS3NeedsABucket: -embedded=false without TILES_BUCKET is
// refused on the same one line as a missing region or credentials, not
// with the configuration's two-line "TILES_BUCKET is required".
func TestExternalS3NeedsABucket(t *testing.T) {
	s3localtest.IsolateEnv(t)
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"no bucket", map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"},
			"but it has no bucket (TILES_BUCKET); set them"},
		{"nothing", map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
			"but it has no bucket (TILES_BUCKET), no region (AWS_REGION, or a profile's region) and no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE); set them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.set {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := stack.Start(ctx, stack.Options{Env: mapEnv(map[string]string{"DISK_CACHE_BYTES": "0"}), Embedded: false, Addr: "127.0.0.1:0"})
			if err == nil {
				st.Close(context.Background())
				t.Fatal("started without a bucket")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "devstack: -embedded=false uses the S3 of the environment") || !strings.Contains(msg, tc.want) {
				t.Errorf("got %q, want one line with %q", msg, tc.want)
			}
		})
	}
}
