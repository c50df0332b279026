package awsclient_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tilesieve/tilesieve/shared/awsclient"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	noCreds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found")
	})
	static := credentials.NewStaticCredentialsProvider("AKID", "secret", "")
	for _, tt := range []struct {
		name    string
		region  string
		creds   aws.CredentialsProvider
		missing []string
		cause   string // the provider's error, kept as the cause
	}{
		{"complete", "eu-west-1", static, nil, ""},
		{"no region", "", static, []string{awsclient.NoRegion}, ""},
		{"no credentials", "eu-west-1", noCreds, []string{awsclient.NoCredentials}, "no EC2 IMDS role found"},
		{"no provider", "eu-west-1", nil, []string{awsclient.NoCredentials}, ""},
		{"neither", "", noCreds, []string{awsclient.NoRegion, awsclient.NoCredentials}, "no EC2 IMDS role found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := awsclient.Check(context.Background(), tt.region, tt.creds)
			var inc *awsclient.IncompleteError
			if tt.missing == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &inc) || !slices.Equal(inc.Missing, tt.missing) {
				t.Fatalf("got %v, want %q", err, tt.missing)
			}
			if got := fmt.Sprint(inc.Err); tt.cause != "" && got != tt.cause || tt.cause == "" && inc.Err != nil {
				t.Errorf("got cause %v, want %q", inc.Err, tt.cause)
			}
		})
	}
}
