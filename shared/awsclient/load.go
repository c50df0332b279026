package awsclient

import (
	"github.com/aws/aws-sdk-go-v2/aws"
)

// EnvCredsTag is the build tag of the Lambda bootstraps. With it, Load reads
// the credentials and the region from the environment only, as Lambda sets
// them for the function's role, and the SDK's configuration loader (shared
// files, profiles, SSO, STS web identity, IMDS) is not linked: about 1.5 MB
// of the bootstrap and the loader's work at init. Without it Load is the
// SDK's default chain, for the CLI, local runs and tests.
const EnvCredsTag = "envcreds"

// Settings are the parts of the SDK's configuration the product chooses.
// The zero value takes everything from the environment.
type Settings struct {
	// Region; "" reads AWS_REGION (then, off the envcreds build, the
	// shared config).
	Region string
	// Credentials; nil reads them from the environment (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), or off the envcreds build
	// the SDK's default chain. When set, the shared config files are not
	// read: the caller has chosen its configuration.
	Credentials aws.CredentialsProvider
	// BaseEndpoint; "" reads AWS_ENDPOINT_URL, or AWS's endpoints when
	// that is unset.
	BaseEndpoint string
	// HTTPClient; nil is the SDK's.
	HTTPClient aws.HTTPClient
	// RetryMaxAttempts; 0 is the SDK's default.
	RetryMaxAttempts int
}
