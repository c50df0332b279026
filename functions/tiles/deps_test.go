package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// TestBootstrapLinksOnlyWhatItCalls: the tile bootstrap, built as Lambda
// runs it, links neither CloudFront's client (only the worker talks to the
// CDN) nor SQS's (the admin handoff sends its one message itself, see
// queue.Handoff), nor the SDK's configuration loader with its STS and SSO
// credential chain (the envcreds build reads the environment): each is a
// package init on every cold start and bytes of the bootstrap. Neither
// Lambda links the PMTiles writer or the upload package, which are the
// operator's command's. The worker, which calls CloudFront, and the
// command, which writes archives, show the check can see a linked package.
func TestBootstrapLinksOnlyWhatItCalls(t *testing.T) {
	t.Parallel()
	goTool := tooltest.Go.Path(t)
	const mod = "github.com/tilesieve/tilesieve/"
	const sdk = "github.com/aws/aws-sdk-go-v2/"
	writer := []string{mod + "shared/formats/pmtiles/pmwrite", mod + "infra/tilesieve/upload"}
	for _, tc := range []struct {
		pkg        string
		want, deny []string
	}{
		{"functions/tiles", []string{sdk + "service/s3"},
			append([]string{sdk + "service/cloudfront", sdk + "service/sqs", sdk + "config", sdk + "service/sts", sdk + "service/sso", sdk + "service/ssooidc"}, writer...)},
		{"worker", []string{sdk + "service/s3", sdk + "service/cloudfront"}, append([]string{sdk + "service/sqs", sdk + "config"}, writer...)},
		{"infra/tilesieve", writer, nil},
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

// TestLayers: each kind of change has one place. The tier engine links no
// transport or vendor package (no AWS SDK, no HTTP); the HTTP contract
// links no purge, configuration, format or origin code; the worker links
// no tier and no format's reader; and nothing under shared/ reaches into
// infra/ (the operator's command, the local stack, the test rigs).
func TestLayers(t *testing.T) {
	t.Parallel()
	goTool := tooltest.Go.Path(t)
	const mod = "github.com/tilesieve/tilesieve/"
	for _, tc := range []struct {
		pkg  string
		deny []string // import path prefixes
	}{
		{"shared/tiers", []string{"github.com/aws/", "net/http", mod + "shared/origin", mod + "shared/formats"}},
		{"shared/tileserver", []string{mod + "shared/purge", mod + "shared/config", mod + "shared/formats/pmtiles",
			mod + "shared/formats/mbtiles", mod + "shared/origin", mod + "shared/admin", "github.com/aws/aws-sdk-go-v2"}},
		{"worker", []string{mod + "shared/tiers", mod + "shared/formats/registry", mod + "shared/formats/pmtiles", mod + "shared/tileserver"}},
		{"shared/...", []string{mod + "infra/", mod + "functions/", mod + "worker"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(goTool, "list", "-deps", mod+tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, p := range tc.deny {
					if strings.HasPrefix(dep, p) {
						t.Errorf("%s links %s", tc.pkg, dep)
					}
				}
			}
		})
	}
}
