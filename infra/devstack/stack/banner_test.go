package stack_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
)

// TestBannerUsesTheProjectsCommand: the purge walk needs Go alone: it
// uploads and deletes with the project's command, and shows the AWS CLI
// only as the alternative; its header checks match the two header lines
// they mean, not Access-Control-Expose-Headers, which names them too.
func TestBannerUsesTheProjectsCommand(t *testing.T) {
	t.Parallel()
	st := startEmbedded(t, nil)
	b := st.Banner()
	steps := bannerSteps(b)
	if len(steps) != 7 {
		t.Fatalf("got %d steps, want 7:\n%s", len(steps), b)
	}
	for i, s := range steps {
		if strings.Contains(s, "aws ") {
			t.Errorf("step %d needs the AWS CLI: %s", i+1, s)
		}
		if strings.Contains(s, "grep") && !strings.HasSuffix(strings.TrimSpace(strings.Split(s, "#")[0]), "grep -i -e '^x-cache:' -e '^etag:'") {
			t.Errorf("step %d: want grep -i -e '^x-cache:' -e '^etag:', got %s", i+1, s)
		}
	}
	if !strings.Contains(steps[3], stack.Tilesieve+" upload ") || !strings.Contains(steps[5], stack.Tilesieve+" rm s3://"+st.Tiles.Bucket+"/"+st.Tiles.TilesPrefix+st.Example) {
		t.Errorf("steps 4 and 6 do not upload and delete with %s:\n%s\n%s", stack.Tilesieve, steps[3], steps[5])
	}
	for _, want := range []string{"With the AWS CLI, step 4 is: ", "aws s3 cp " + stack.UploadDir + "/", "and step 6 is: ", "aws s3 rm s3://"} {
		if !strings.Contains(b, want) {
			t.Errorf("the banner does not show the AWS CLI as the alternative (%q):\n%s", want, b)
		}
	}
}

// TestViewerHintsCarryTheURL: the commands the viewer suggests are those
// of the banner, with the stack's own URL, not a path without a host.
func TestViewerHintsCarryTheURL(t *testing.T) {
	t.Parallel()
	st := startEmbedded(t, nil)
	page := string(get(t, st.URL+"/").body)
	want := "-o " + stack.UploadDir + "/" + strings.TrimPrefix(st.Example, "demo/") + " " + st.URL + "/demo/0/0/0.png"
	if !strings.Contains(page, want) || !strings.Contains(page, stack.Tilesieve+" rm ") {
		t.Errorf("the viewer's hints lack %q or the rm command:\n%s", want, page)
	}
}

// TestSeedLogNamesTheS3URL: the seed's log line names where the demo went
// as s3://BUCKET/PREFIX, not bucket and prefix run together
// (tiles/tiles/demo/ read as a doubled prefix).
func TestSeedLogNamesTheS3URL(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 0,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	want := "at=s3://" + st.Tiles.Bucket + "/" + st.Tiles.TilesPrefix + "demo/ "
	if s := logs.String(); !strings.Contains(s, want) || strings.Contains(s, "at=tiles/") || !strings.Contains(s, "events_for=s3://tiles/tiles/*") {
		t.Errorf("logs lack %q (and events_for=s3://tiles/tiles/*):\n%s", want, s)
	}
}

// bannerSteps are the numbered steps of a banner, without their numbers.
func bannerSteps(banner string) []string {
	var steps []string
	for line := range strings.SplitSeq(banner, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), strconv.Itoa(len(steps)+1)+". "); ok {
			steps = append(steps, rest)
		}
	}
	return steps
}
