//go:build envcreds

package awsclient

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// TestFromEnv: the envcreds build reads the region, the credentials (with
// the session token Lambda sets) and the endpoint from the environment, and
// says what is missing instead of failing the first request.
func TestFromEnv(t *testing.T) {
	full := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN": "token", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
	}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	for _, tt := range []struct {
		name         string
		env          map[string]string
		s            Settings
		wantRegion   string
		wantKey      string
		wantToken    string
		wantEndpoint string
		wantErr      string
	}{
		{name: "lambda environment", env: full, wantRegion: "eu-west-1", wantKey: "AKID", wantToken: "token", wantEndpoint: "http://127.0.0.1:9000"},
		{name: "default region", env: func() map[string]string { m := without("AWS_REGION"); m["AWS_DEFAULT_REGION"] = "us-west-2"; return m }(),
			wantRegion: "us-west-2", wantKey: "AKID", wantToken: "token", wantEndpoint: "http://127.0.0.1:9000"},
		{name: "AWS's endpoints", env: without("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"), wantRegion: "eu-west-1", wantKey: "AKID"},
		{name: "settings win", env: full, s: Settings{Region: "ap-south-1", BaseEndpoint: "http://127.0.0.1:1",
			Credentials: credentials.NewStaticCredentialsProvider("OTHER", "s", "")},
			wantRegion: "ap-south-1", wantKey: "OTHER", wantEndpoint: "http://127.0.0.1:1"},
		{name: "no region", env: without("AWS_REGION"), wantErr: "awsclient: AWS_REGION is not set"},
		{name: "no secret", env: without("AWS_SECRET_ACCESS_KEY"), wantErr: "awsclient: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
		{name: "no key id", env: without("AWS_ACCESS_KEY_ID"), wantErr: "awsclient: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
		{name: "credentials given, none in the environment", env: without("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
			s: Settings{Credentials: credentials.NewStaticCredentialsProvider("GIVEN", "s", "")}, wantRegion: "eu-west-1", wantKey: "GIVEN", wantEndpoint: "http://127.0.0.1:9000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := fromEnv(func(k string) string { return tt.env[k] }, tt.s)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tt.wantRegion {
				t.Errorf("got region %q, want %q", cfg.Region, tt.wantRegion)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if creds.AccessKeyID != tt.wantKey || creds.SessionToken != tt.wantToken {
				t.Errorf("got key %q token %q, want %q %q", creds.AccessKeyID, creds.SessionToken, tt.wantKey, tt.wantToken)
			}
			if got := aws.ToString(cfg.BaseEndpoint); got != tt.wantEndpoint {
				t.Errorf("got endpoint %q, want %q", got, tt.wantEndpoint)
			}
		})
	}
}
