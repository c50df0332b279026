//go:build !envcreds

package awsclient

import (
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// MetadataDisabledEnv is the SDK's switch of the EC2 instance metadata
// service: "true" keeps the SDK off it, "false" lets it ask, as on EC2.
const MetadataDisabledEnv = "AWS_EC2_METADATA_DISABLED"

// imdsState is the instance metadata setting Load gives the SDK. The SDK
// asks the metadata service for credentials when nothing else has them,
// wherever it runs: off EC2 that is a warning on stderr ("falling back to
// IMDSv1") and a request to an address that may belong to someone else, in
// front of the error that says what is missing. So Load keeps it off unless
// this machine is an EC2 instance or MetadataDisabledEnv says otherwise.
func imdsState(getenv func(string) string, onEC2 func() bool) imds.ClientEnableState {
	switch v := getenv(MetadataDisabledEnv); {
	case strings.EqualFold(v, "true"), strings.EqualFold(v, "false"):
		return imds.ClientDefaultEnableState // the SDK reads it
	case onEC2():
		return imds.ClientDefaultEnableState
	}
	return imds.ClientDisabled
}

// OnEC2 reports whether this machine is an EC2 instance, from what its
// hypervisor shows in sysfs, without a network call: "Amazon EC2" as the
// DMI vendor of a Nitro instance, a UUID starting with "ec2" on a Xen one.
// Elsewhere (no sysfs, or an EC2 Mac) it reports false; setting
// AWS_EC2_METADATA_DISABLED=false lets the SDK ask all the same.
func OnEC2() bool {
	for _, f := range []string{"/sys/devices/virtual/dmi/id/sys_vendor", "/sys/devices/virtual/dmi/id/board_vendor"} {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == "Amazon EC2" {
			return true
		}
	}
	b, err := os.ReadFile("/sys/hypervisor/uuid")
	return err == nil && strings.HasPrefix(strings.ToLower(string(b)), "ec2")
}
