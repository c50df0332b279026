package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

// TestUploadCommand runs the command as a user would against a local
// endpoint, configured only through the environment.
func TestUploadCommand(t *testing.T) {
	ep := s3localtest.Start(t, "tiles")
	env := localEnv(t, ep)
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
	database := filepath.Join(dir, "roads.mbtiles")
	db, err := sql.Open("sqlite", database)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE metadata (name text, value text)`,
		`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
		`INSERT INTO tiles VALUES (0, 0, 0, X'1f8b0800')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	notDatabase := filepath.Join(dir, "junk.mbtiles")
	if err := os.WriteFile(notDatabase, bytes.Repeat([]byte("junk"), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	tiles := filepath.Join(dir, "tiles")
	filetree.Write(t, tiles, map[string][]byte{"0/0/0.png": []byte("\x89PNG")})
	notTIFF := filepath.Join(dir, "scan.tif")
	if err := os.WriteFile(notTIFF, bytes.Repeat([]byte("scan"), 100), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"archive", []string{"upload", "-quiet", archive, "s3://tiles/maps/world"}, 0, "s3://tiles/maps/world: 1 uploaded", ""},
		{"archive again", []string{"upload", archive, "s3://tiles/maps/world"}, 0, "skipped 1: already in the bucket", ""},
		{"directory", []string{"upload", "-concurrency", "2", tiles, "s3://tiles/maps/osm"}, 0, "1 uploaded (4 bytes)", ""},
		{"database", []string{"upload", "-quiet", database, "s3://tiles/maps/roads"}, 0, "s3://tiles/maps/roads: 1 uploaded", ""},
		{"not a database", []string{"upload", notDatabase, "s3://tiles/maps/junk"}, 2, "", "tilesieve: upload: " + notDatabase + ": not a valid MBTiles database: mbtiles: " + notDatabase + ": not an SQLite database"},
		{"not a TIFF", []string{"upload", notTIFF, "s3://tiles/maps/scan"}, 2, "", "tilesieve: upload: " + notTIFF + ": not a TIFF tilesieve reads: tiff: invalid file: "},
		{"bad URL", []string{"upload", tiles, "https://tiles/maps/osm"}, 2, "", "want s3://bucket/prefix/NAME"},
		{"bad PATH", []string{"upload", filepath.Join(dir, "nope"), "s3://tiles/maps/osm"}, 2, "", "no such file or directory"},
		{"random bytes", []string{"upload", "-quiet", random, "s3://tiles/maps/random"}, 2, "",
			"tilesieve: upload: " + random + `: not a valid PMTiles v3 archive: pmtiles: header: bad magic "\x00\x9cA\a\x00\x9cA": pmtiles: invalid archive` + "\n"},
		{"truncated archive", []string{"upload", "-quiet", truncated, "s3://tiles/maps/truncated"}, 2, "",
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
			// One output: a summary on stdout and nothing of it on stderr,
			// or, when nothing was counted, the error alone.
			if n := strings.Count(out.String(), " uploaded ("); code == 0 && n != 1 || code != 0 && n != 0 {
				t.Errorf("stdout %q: got %d summaries, want %d", out.String(), n, map[bool]int{true: 1}[code == 0])
			}
			if strings.Contains(errOut.String(), "upload: done") || code != 0 && strings.Count(strings.TrimSuffix(errOut.String(), "\n"), "\n") > 0 && strings.HasPrefix(errOut.String(), "tilesieve: upload: ") {
				t.Errorf("stderr %q: want no second summary, and one line for an error", errOut.String())
			}
		})
	}
	for key, ctype := range map[string]string{"maps/world.pmtiles": "application/vnd.pmtiles", "maps/osm/0/0/0.png": "image/png", "maps/roads.mbtiles": "application/vnd.sqlite3"} {
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

// localEnv points the command at ep through the environment, as a user
// would; the SDK's default chain reads the credentials from the process
// environment.
func localEnv(t *testing.T, ep *s3localtest.Endpoint) map[string]string {
	t.Helper()
	s3localtest.IsolateEnv(t)
	s3localtest.EnvCredentials(t)
	return map[string]string{"AWS_ENDPOINT_URL": ep.URL, "S3_FORCE_PATH_STYLE": "true", "AWS_REGION": s3local.DefaultRegion}
}

// TestCheckCommand runs the probe against a store that honours conditional
// writes and one that ignores them.
func TestCheckCommand(t *testing.T) {
	for _, c := range []struct {
		name     string
		ignore   bool
		args     []string
		code     int
		out      []string // in stdout, in order
		errOut   string
		probeKey string // the object the probe left; "" for none
	}{
		{"honouring", false, []string{"check", "s3://tiles"}, 0, []string{
			"s3://tiles/_tilesieve/journal/: checking",
			"PUT _tilesieve/journal/probe.json: 200 OK: ok",
			"If-None-Match: * (the object exists): 412 Precondition Failed: ok",
			"(not its ETag): 412 Precondition Failed: ok",
			"s3://tiles/_tilesieve/journal/: honours conditional writes",
		}, "", "_tilesieve/journal/probe.json"},
		{"honouring, own prefix", false, []string{"check", "s3://tiles/ops/journal"}, 0, []string{
			"PUT ops/journal/probe.json: 200 OK: ok", "s3://tiles/ops/journal/: honours conditional writes",
		}, "", "ops/journal/probe.json"},
		{"ignoring", true, []string{"check", "s3://tiles/"}, 1, []string{
			"PUT _tilesieve/journal/probe.json: 200 OK: ok",
			"If-None-Match: * (the object exists): 200 OK: WRONG, want 412",
			"does NOT honour conditional writes",
			"the bucket ignores If-None-Match: * on PUT",
		}, "", "_tilesieve/journal/probe.json"},
		{"access denied", false, []string{"check", "s3://tiles/denied/"}, 1, []string{"403 Forbidden: WRONG, want 200", "s3://tiles/denied/: could not check", "AccessDenied"}, "", ""},
		{"bad URL", false, []string{"check", "https://tiles/"}, 2, nil, "want s3://bucket[/JOURNAL_PREFIX]", ""},
		{"missing argument", false, []string{"check"}, 2, nil, "usage: tilesieve check", ""},
		{"extra argument", false, []string{"check", "s3://tiles", "s3://other"}, 2, nil, "usage: tilesieve check", ""},
		{"unknown subcommand", false, []string{"doctor"}, 2, nil, "usage: tilesieve check", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep := s3localtest.StartConfig(t, s3local.Config{Buckets: []string{"tiles"}, IgnoreWriteConditions: c.ignore})
			ep.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/denied/") }, Status: http.StatusForbidden})
			env := localEnv(t, ep)
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, func(k string) string { return env[k] }, &out, &errOut)
			rest, inOrder := out.String(), true
			for _, want := range c.out {
				i := strings.Index(rest, want)
				if i < 0 {
					inOrder = false
					break
				}
				rest = rest[i+len(want):]
			}
			if code != c.code || !inOrder || !strings.Contains(errOut.String(), c.errOut) {
				t.Errorf("got code %d, stdout %q, stderr %q; want %d, %q in order, %q", code, out.String(), errOut.String(), c.code, c.out, c.errOut)
			}
			if c.probeKey != "" {
				if _, err := ep.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("tiles"), Key: aws.String(c.probeKey)}); err != nil {
					t.Errorf("probe object %s: %v", c.probeKey, err)
				}
			}
		})
	}
}
