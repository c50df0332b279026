package main

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/s3local"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(envOf(map[string]string{"TILES_BUCKET": "tiles"}))
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Bucket:        "tiles",
		JournalPrefix: "_tilesieve/journal/",
		Coalesce:      purge.CoalesceConfig{Threshold: 8, Cap: 15},
		SyncInterval:  time.Second,
		Region:        "us-east-1",
		LogLevel:      slog.LevelInfo,
	}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if d := c.settleDelay(); d != 1250*time.Millisecond {
		t.Errorf("settle delay: got %v", d)
	}
}

func TestLoadConfigAll(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(envOf(map[string]string{
		"TILES_BUCKET": "b", "TILES_PREFIX": "tiles/", "JOURNAL_PREFIX": "_j/", "DISTRIBUTION_ID": "E1",
		"CDN_PATH_PREFIX": "maps/", "COALESCE_THRESHOLD": "4", "COALESCE_CAP": "10", "SYNC_INTERVAL": "2s",
		"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://localhost:4566", "S3_FORCE_PATH_STYLE": "true",
		"LOG_LEVEL": "DEBUG",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Bucket: "b", TilesPrefix: "tiles/", JournalPrefix: "_j/", DistributionID: "E1", CDNPathPrefix: "maps/",
		Coalesce: purge.CoalesceConfig{Threshold: 4, Cap: 10}, SyncInterval: 2 * time.Second,
		Region: "eu-west-1", Endpoint: "http://localhost:4566", ForcePathStyle: true, LogLevel: slog.LevelDebug,
	}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

// TestLoadConfigEveryProblem: a bad environment is reported whole.
func TestLoadConfigEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig(envOf(map[string]string{
		"TILES_PREFIX": "tiles/", "JOURNAL_PREFIX": "tiles/journal/", "COALESCE_THRESHOLD": "x",
		"COALESCE_CAP": "0", "SYNC_INTERVAL": "soon", "AWS_ENDPOINT_URL": "localhost",
		"S3_FORCE_PATH_STYLE": "perhaps", "LOG_LEVEL": "loud", "CDN_PATH_PREFIX": "a//b",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"TILES_BUCKET", "JOURNAL_PREFIX", "COALESCE_THRESHOLD", "COALESCE_CAP", "SYNC_INTERVAL", "AWS_ENDPOINT_URL", "S3_FORCE_PATH_STYLE", "LOG_LEVEL", "CDN_PATH_PREFIX"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not mention %s:\n%v", name, err)
		}
	}
	if _, err := loadConfig(envOf(map[string]string{"TILES_BUCKET": "b", "TILES_PREFIX": "tiles"})); err == nil {
		t.Error("TILES_PREFIX without a trailing slash accepted")
	}
}

// TestEnvVarsAreTheOnesRead keeps envVars (the documented list) honest.
func TestEnvVarsAreTheOnesRead(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	if _, err := loadConfig(func(k string) string { seen[k] = true; return map[string]string{"TILES_BUCKET": "b"}[k] }); err != nil {
		t.Fatal(err)
	}
	var read, listed []string
	for k := range seen {
		read = append(read, k)
	}
	for _, v := range envVars {
		listed = append(listed, v.Name)
	}
	slices.Sort(read)
	slices.Sort(listed)
	if !slices.Equal(read, listed) {
		t.Errorf("read %q, listed %q", read, listed)
	}
}

// TestBuildAndHandle wires the worker as main does, against a local S3
// endpoint and a fake CloudFront, and runs a sample event through it.
func TestBuildAndHandle(t *testing.T) {
	t.Parallel()
	srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cf := cdntest.New(t)

	cfg, err := loadConfig(envOf(map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISTRIBUTION_ID": "E2QWRUHEXAMPLE",
		"AWS_ENDPOINT_URL": hs.URL, "S3_FORCE_PATH_STYLE": "true", "SYNC_INTERVAL": "1ms",
	}))
	if err != nil {
		t.Fatal(err)
	}
	w, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler),
		awsconfig.WithCredentialsProvider(srv.Credentials()),
		awsconfig.WithBaseEndpoint(cf.URL), // CloudFront; S3 has its own endpoint
		awsconfig.WithSharedConfigFiles(nil), awsconfig.WithSharedCredentialsFiles(nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fs.ReadFile(events.FS, "s3-delete.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Handle(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	j := purge.NewJournal(srv.Client(hs.URL), "tiles", "_tilesieve/journal/", purge.JournalOptions{})
	entries, _, err := j.ReadAfter(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !slices.Equal(entries[0].Prefixes, []string{"city maps/3/4/6.png", "osm/12/2048/1361.png"}) {
		t.Errorf("journal: %+v", entries)
	}
	if reqs := cf.Requests(); len(reqs) != 1 || !slices.Equal(reqs[0].Paths, []string{"/city%20maps/3/4/6.png*", "/osm/12/2048/1361.png*"}) {
		t.Errorf("CloudFront: %+v", reqs)
	}
}
