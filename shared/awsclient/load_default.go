//go:build !envcreds

package awsclient

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the SDK's default configuration (environment, shared config
// and profiles, SSO, the instance's or container's role) with s applied on
// top.
func Load(ctx context.Context, s Settings) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	if s.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(s.Credentials),
			config.WithSharedConfigFiles(nil), config.WithSharedCredentialsFiles(nil))
	}
	if s.BaseEndpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(s.BaseEndpoint))
	}
	if s.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(s.HTTPClient))
	}
	if s.RetryMaxAttempts > 0 {
		opts = append(opts, config.WithRetryMaxAttempts(s.RetryMaxAttempts))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsclient: load the AWS configuration: %w", err)
	}
	return cfg, nil
}
