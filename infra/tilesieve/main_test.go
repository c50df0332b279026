package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/pmtiles"
	"github.com/tilesieve/tilesieve/shared/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/s3local"
	"github.com/tilesieve/tilesieve/shared/s3local/s3localtest"
)

// TestUploadCommand runs the command as a user would against a local
// endpoint, configured only through the environment.
func TestUploadCommand(t *testing.T) {
	ep := s3localtest.Start(t, "tiles")
	// The SDK's default chain reads credentials from the process environment.
	t.Setenv("AWS_ACCESS_KEY_ID", s3local.DefaultAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3local.DefaultSecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := map[string]string{"AWS_ENDPOINT_URL": ep.URL, "S3_FORCE_PATH_STYLE": "true", "AWS_REGION": s3local.DefaultRegion}
	getenv := func(k string) string { return env[k] }

	dir := t.TempDir()
	archive := filepath.Join(dir, "world.pmtiles")
	if err := os.WriteFile(archive, pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("t")}, pmtilestest.Options{Clustered: true}), 0o644); err != nil {
		t.Fatal(err)
	}
	random := filepath.Join(dir, "random.pmtiles")
	if err := os.WriteFile(random, bytes.Repeat([]byte("\x00\x9c\x41\x07"), 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	whole := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("tile")}, pmtilestest.Options{Clustered: true})
	truncated := filepath.Join(dir, "truncated.pmtiles")
	if err := os.WriteFile(truncated, whole[:len(whole)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	tiles := filepath.Join(dir, "tiles")
	if err := os.MkdirAll(filepath.Join(tiles, "0", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tiles, "0", "0", "0.png"), []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"archive", []string{"upload", "-quiet", archive, "s3://tiles/maps/world"}, 0, "s3://tiles/maps/world: 1 uploaded", ""},
		{"archive again", []string{"upload", archive, "s3://tiles/maps/world"}, 0, "skipped 1: already in the bucket", "upload: done: 1/1 files, 0 uploaded"},
		{"directory", []string{"upload", "-concurrency", "2", tiles, "s3://tiles/maps/osm"}, 0, "1 uploaded (4 bytes)", ""},
		{"bad URL", []string{"upload", tiles, "https://tiles/maps/osm"}, 2, "", "want s3://bucket/prefix/NAME"},
		{"bad PATH", []string{"upload", filepath.Join(dir, "nope"), "s3://tiles/maps/osm"}, 2, "", "no such file or directory"},
		{"random bytes", []string{"upload", "-quiet", random, "s3://tiles/maps/random"}, 2, "0 uploaded",
			"tilesieve: upload: " + random + `: not a valid PMTiles v3 archive: pmtiles: header: bad magic "\x00\x9cA\a\x00\x9cA": pmtiles: invalid archive` + "\n"},
		{"truncated archive", []string{"upload", "-quiet", truncated, "s3://tiles/maps/truncated"}, 2, "0 uploaded",
			"tilesieve: upload: " + truncated + fmt.Sprintf(": not a valid PMTiles v3 archive: pmtiles: header: tile data at %d+4 lies outside the archive (%d bytes): pmtiles: invalid archive\n", len(whole)-4, len(whole)-1)},
		{"missing argument", []string{"upload", tiles}, 2, "", "usage: tilesieve upload"},
		{"no subcommand", nil, 2, "", "usage: tilesieve upload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, getenv, &out, &errOut)
			if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.errOut) {
				t.Errorf("got code %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), c.code, c.out, c.errOut)
			}
			if n := strings.Count(errOut.String(), "upload: "); code == 2 && strings.HasPrefix(errOut.String(), "tilesieve: upload: ") && n != 1 {
				t.Errorf("stderr %q: got %d upload: prefixes, want 1", errOut.String(), n)
			}
		})
	}
	for key, ctype := range map[string]string{"maps/world.pmtiles": "application/vnd.pmtiles", "maps/osm/0/0/0.png": "image/png"} {
		out, err := ep.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("tiles"), Key: aws.String(key)})
		if err != nil || aws.ToString(out.ContentType) != ctype {
			t.Errorf("%s: got %v, %v, want Content-Type %s", key, out, err, ctype)
		}
	}

	env["AWS_ENDPOINT_URL"] = "not a url"
	var errOut bytes.Buffer
	if code := run(context.Background(), []string{"upload", tiles, "s3://tiles/maps/osm"}, getenv, &bytes.Buffer{}, &errOut); code != 2 || !strings.Contains(errOut.String(), "AWS_ENDPOINT_URL") {
		t.Errorf("bad endpoint: got code %d, stderr %q", code, errOut.String())
	}
}
