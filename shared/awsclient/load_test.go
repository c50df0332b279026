package awsclient_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestLoadSignsWithTheEnvironment: in both builds (with and without the
// envcreds tag) a configuration loaded from the Lambda-style environment
// signs requests the endpoint accepts, and a wrong secret is refused, so the
// credentials used are the environment's.
func TestLoadSignsWithTheEnvironment(t *testing.T) {
	e := s3localtest.Start(t, "tiles")
	s3localtest.IsolateEnv(t)
	t.Setenv("AWS_REGION", s3local.DefaultRegion)
	t.Setenv("AWS_ENDPOINT_URL", e.URL)
	for _, tt := range []struct {
		name     string
		secret   string
		settings awsclient.Settings
		wantErr  string
	}{
		{name: "environment", secret: s3local.DefaultSecretKey},
		{name: "wrong secret in the environment", secret: "wrong", wantErr: "SignatureDoesNotMatch"},
		{name: "explicit credentials win", secret: "wrong", settings: awsclient.Settings{
			Credentials: credentials.NewStaticCredentialsProvider(s3local.DefaultAccessKey, s3local.DefaultSecretKey, ""),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", s3local.DefaultAccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tt.secret)
			tt.settings.RetryMaxAttempts = 1
			cfg, err := awsclient.Load(context.Background(), tt.settings)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != s3local.DefaultRegion {
				t.Errorf("got region %q, want %q", cfg.Region, s3local.DefaultRegion)
			}
			c := awsclient.S3(cfg, "", true)
			_, err = c.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("tiles"), Key: aws.String("k"), Body: strings.NewReader("v"),
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error carrying %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k")})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Body.Close()
			if b, _ := io.ReadAll(out.Body); string(b) != "v" {
				t.Errorf("got %q, want %q", b, "v")
			}
		})
	}
}
