package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBootstrapLinksOnlyWhatItCalls: the tile bootstrap, built as Lambda
// runs it, links neither CloudFront's client (only the worker talks to the
// CDN) nor SQS's (the admin handoff sends its one message itself, see
// app.QueueHandoff), nor the SDK's configuration loader with its STS and SSO
// credential chain (the envcreds build reads the environment): each is a
// package init on every cold start and bytes of the bootstrap. The worker,
// which does call CloudFront, shows the check can see a linked client.
func TestBootstrapLinksOnlyWhatItCalls(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	const mod = "github.com/tilesieve/tilesieve/"
	const sdk = "github.com/aws/aws-sdk-go-v2/"
	for _, tc := range []struct {
		pkg        string
		want, deny []string
	}{
		{"functions/tiles", []string{sdk + "service/s3"},
			[]string{sdk + "service/cloudfront", sdk + "service/sqs", sdk + "config", sdk + "service/sts", sdk + "service/sso", sdk + "service/ssooidc"}},
		{"worker", []string{sdk + "service/s3", sdk + "service/cloudfront"}, []string{sdk + "service/sqs", sdk + "config"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(goTool, "list", "-deps", "-tags", "lambda.norpc,envcreds", mod+tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			deps := strings.Fields(string(out))
			for _, p := range tc.want {
				if !slices.Contains(deps, p) {
					t.Errorf("%s does not link %s: the check cannot see it", tc.pkg, p)
				}
			}
			for _, p := range tc.deny {
				if slices.Contains(deps, p) {
					t.Errorf("%s links %s", tc.pkg, p)
				}
			}
		})
	}
}
