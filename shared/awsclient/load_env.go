//go:build envcreds

package awsclient

import (
	"context"
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Load returns a configuration from the environment alone, as Lambda sets
// it for the function's role: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, AWS_REGION, and AWS_ENDPOINT_URL off AWS; s applies on
// top. Missing credentials or region are an error here, at init, rather
// than a failed first request.
func Load(_ context.Context, s Settings) (aws.Config, error) {
	return fromEnv(os.Getenv, s)
}

func fromEnv(getenv func(string) string, s Settings) (aws.Config, error) {
	cfg := aws.Config{
		Region:           s.Region,
		Credentials:      s.Credentials,
		HTTPClient:       s.HTTPClient,
		RetryMaxAttempts: s.RetryMaxAttempts,
	}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("awsclient: AWS_REGION is not set (this build reads its configuration from the environment only)")
	}
	if cfg.Credentials == nil {
		id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		if id == "" || secret == "" {
			return aws.Config{}, errors.New("awsclient: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (this build reads its credentials from the environment only)")
		}
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))
	}
	if e := s.BaseEndpoint; e != "" {
		cfg.BaseEndpoint = aws.String(e)
	} else if e := getenv("AWS_ENDPOINT_URL"); e != "" {
		cfg.BaseEndpoint = aws.String(e)
	}
	return cfg, nil
}
