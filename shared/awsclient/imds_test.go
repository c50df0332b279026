//go:build !envcreds

package awsclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

func TestIMDSState(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env   string
		onEC2 bool
		want  imds.ClientEnableState
	}{
		{"", false, imds.ClientDisabled},
		{"", true, imds.ClientDefaultEnableState},
		{"true", true, imds.ClientDefaultEnableState},
		{"FALSE", false, imds.ClientDefaultEnableState},
		{"yes", false, imds.ClientDisabled}, // the SDK ignores it too
	} {
		got := imdsState(func(k string) string {
			if k == MetadataDisabledEnv {
				return tt.env
			}
			return ""
		}, func() bool { return tt.onEC2 })
		if got != tt.want {
			t.Errorf("%s=%q, on EC2 %v: got %v, want %v", MetadataDisabledEnv, tt.env, tt.onEC2, got, tt.want)
		}
	}
}

// TestLoadOffEC2AsksNoMetadataService: off EC2, with no credentials
// anywhere, Load's configuration finds none without a request to the
// instance metadata service (here a local fake at
// AWS_EC2_METADATA_SERVICE_ENDPOINT), unless AWS_EC2_METADATA_DISABLED=false
// asks for it; Check then names what is missing.
func TestLoadOffEC2AsksNoMetadataService(t *testing.T) {
	if OnEC2() {
		t.Skip("on EC2 the SDK asks the instance's metadata service, as it should")
	}
	var asked atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer fake.Close()
	s3localtest.IsolateEnv(t)
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake.URL)
	for _, tt := range []struct {
		disabled string
		wantAsks bool
	}{{"", false}, {"false", true}} {
		t.Setenv(MetadataDisabledEnv, tt.disabled)
		asked.Store(0)
		cfg, err := Load(context.Background(), Settings{Region: s3local.DefaultRegion, RetryMaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = Check(context.Background(), cfg.Region, cfg.Credentials)
		var inc *IncompleteError
		if !errors.As(err, &inc) || len(inc.Missing) != 1 || inc.Missing[0] != NoCredentials {
			t.Errorf("%s=%q: got %v, want %q", MetadataDisabledEnv, tt.disabled, err, NoCredentials)
		}
		if n := asked.Load(); (n > 0) != tt.wantAsks {
			t.Errorf("%s=%q: the metadata service got %d requests, want some: %v", MetadataDisabledEnv, tt.disabled, n, tt.wantAsks)
		}
	}
}
