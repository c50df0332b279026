//go:build !envcreds

package awsclient

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Load returns the SDK's default configuration (environment, shared config
// and profiles, SSO, the container's role, and the instance's role on EC2:
// see imdsState) with s applied on top.
func Load(ctx context.Context, s Settings) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if st := imdsState(os.Getenv, OnEC2); st != imds.ClientDefaultEnableState {
		opts = append(opts, config.WithEC2IMDSClientEnableState(st))
	}
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
