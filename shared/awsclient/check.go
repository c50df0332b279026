package awsclient

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// IncompleteError is Check's answer for a configuration that cannot sign a
// request. Missing says what to set, a phrase per gap; commands print it
// on one line in their own words rather than the SDK's first request
// failing with "Invalid region: region was not a valid DNS name" or a list
// of every credential source it tried.
type IncompleteError struct {
	// Missing holds "no region (AWS_REGION, or a profile's region)" and/or
	// "no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or
	// AWS_PROFILE)".
	Missing []string
	// Err is the credential chain's own error, nil when only the region is
	// missing: detail for a debug log.
	Err error
}

func (e *IncompleteError) Error() string { return "awsclient: " + strings.Join(e.Missing, " and ") }

func (e *IncompleteError) Unwrap() error { return e.Err }

// Phrases of IncompleteError.Missing.
const (
	NoRegion      = "no region (AWS_REGION, or a profile's region)"
	NoCredentials = "no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
)

// checkTimeout bounds the credential lookup of Check: an SSO or
// assume-role provider makes a network call.
const checkTimeout = 10 * time.Second

// Check reports, as an *IncompleteError, whether a region and credentials
// (those of an S3 client's Options, or of Load's configuration) are missing;
// nil when both are there. It retrieves the credentials once.
func Check(ctx context.Context, region string, creds aws.CredentialsProvider) error {
	var e IncompleteError
	if region == "" {
		e.Missing = append(e.Missing, NoRegion)
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if creds == nil {
		e.Missing = append(e.Missing, NoCredentials)
	} else if _, err := creds.Retrieve(ctx); err != nil {
		e.Missing, e.Err = append(e.Missing, NoCredentials), err
	}
	if len(e.Missing) == 0 {
		return nil
	}
	return &e
}
