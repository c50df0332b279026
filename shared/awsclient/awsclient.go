// Package awsclient builds the S3 client every part of the product uses (the
// tile function's origin, the sync worker's journal), so that the endpoint
// and addressing settings (AWS_ENDPOINT_URL, S3_FORCE_PATH_STYLE) are applied
// in one place, the same on Lambda, in the local stack and in tests; and the
// SDK configuration they start from (Load), which the Lambda bootstraps,
// built with the envcreds tag, read from the environment alone. Off EC2,
// Load never asks the instance metadata service unless told to (see
// imdsState), and Check says on one line what a configuration lacks to
// sign a request, so the commands run on a laptop fail with a sentence that
// names the variable to set.
package awsclient

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 returns an S3 client of awsCfg, addressed at endpoint when it is set
// (an S3-compatible endpoint; "" is AWS's) and path-style when pathStyle.
// opts apply after those. A read of an object without a checksum (one
// uploaded without, or a byte range of an archive) logs nothing: the SDK
// would write a line per read to its logger, stderr off Lambda.
func S3(awsCfg aws.Config, endpoint string, pathStyle bool, opts ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(awsCfg, append([]func(*s3.Options){func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}}, opts...)...)
}
