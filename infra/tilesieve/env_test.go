package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

// TestCommandsSayWhatToSet: without a region or credentials every command
// stops before its first request, on one line naming the variables to set,
// not with the SDK's "Invalid region: region was not a valid DNS name" (a
// directory) or "A region must be set when sending requests to S3" (an
// archive).
func TestCommandsSayWhatToSet(t *testing.T) {
	ep := s3localtest.Start(t, "tiles")
	dir := t.TempDir()
	tiles := filepath.Join(dir, "tiles")
	filetree.Write(t, tiles, map[string][]byte{"0/0/0.png": []byte("\x89PNG")})
	archive := filepath.Join(dir, "world.pmtiles")
	if err := os.WriteFile(archive, pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("t")}, pmtilestest.Options{Clustered: true}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		unset []string
		want  string
	}{
		{"no region", []string{"AWS_REGION"}, "tilesieve: no region (AWS_REGION, or a profile's region): set it in the environment\n"},
		{"no credentials", []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}, "tilesieve: no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): set it in the environment\n"},
		{"neither", []string{"AWS_REGION", "AWS_ACCESS_KEY_ID"}, "tilesieve: no region (AWS_REGION, or a profile's region) and no credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): set them in the environment\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := localEnv(t, ep)
			t.Setenv("AWS_DEFAULT_REGION", "")
			for _, k := range c.unset {
				delete(env, k)
				t.Setenv(k, "")
			}
			for _, args := range [][]string{
				{"upload", "-quiet", tiles, "s3://tiles/maps/osm"},
				{"upload", archive, "s3://tiles/maps/world"},
				{"rm", "s3://tiles/maps/world.pmtiles"},
				{"check", "s3://tiles"},
			} {
				var out, errOut bytes.Buffer
				code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
				if code != 1 || out.Len() != 0 || errOut.String() != c.want {
					t.Errorf("%s: got code %d, stdout %q, stderr %q; want 1, nothing, %q", args[0], code, out.String(), errOut.String(), c.want)
				}
			}
		})
	}
}

// TestUploadToNoSuchBucket: a bucket that does not exist is said in the
// one line of the error, with no summary of nothing done.
func TestUploadToNoSuchBucket(t *testing.T) {
	// s3local makes any bucket it is asked for; S3 answers NoSuchBucket.
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles"}}, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/nope") {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><BucketName>nope</BucketName></Error>`)
		})
	})
	env := localEnv(t, ep)
	tiles := filepath.Join(t.TempDir(), "tiles")
	filetree.Write(t, tiles, map[string][]byte{"0/0/0.png": []byte("\x89PNG")})
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"upload", "-quiet", tiles, "s3://nope/maps/osm"}, func(k string) string { return env[k] }, &out, &errOut)
	if msg := errOut.String(); code != 1 || out.Len() != 0 || !strings.HasPrefix(msg, "tilesieve: upload: s3://nope: no such bucket") || strings.Count(msg, "\n") != 1 {
		t.Errorf("got code %d, stdout %q, stderr %q; want 1, nothing, one line saying there is no bucket nope", code, out.String(), msg)
	}
}
