package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// envVars lists every environment variable loadConfig reads, with its
// default. A test checks the list against what loadConfig really reads.
//
// (shared/config will own this; the names, defaults and rules here match it.)
var envVars = []struct{ Name, Default string }{
	{"TILES_BUCKET", "(required)"},
	{"TILES_PREFIX", ""},
	{"JOURNAL_PREFIX", "_tilesieve/journal/"},
	{"DISTRIBUTION_ID", ""},
	{"CDN_PATH_PREFIX", ""},
	{"COALESCE_THRESHOLD", "8"},
	{"COALESCE_CAP", "15"},
	{"SYNC_INTERVAL", "1s"},
	{"AWS_REGION", "us-east-1"},
	{"AWS_ENDPOINT_URL", ""},
	{"S3_FORCE_PATH_STYLE", "false"},
	{"LOG_LEVEL", "info"},
}

// config is the worker's configuration.
type config struct {
	Bucket         string
	TilesPrefix    string
	JournalPrefix  string
	DistributionID string
	CDNPathPrefix  string
	Coalesce       purge.CoalesceConfig
	// SyncInterval is the tile function's SYNC_INTERVAL: the worker waits it
	// (plus a follower's check timeout) before purging the CDN, so that no
	// instance refills the CDN with bytes it has not purged yet.
	SyncInterval   time.Duration
	Region         string
	Endpoint       string
	ForcePathStyle bool
	LogLevel       slog.Level
}

// settleDelay is the wait between the journal append and the CDN purge.
func (c config) settleDelay() time.Duration { return c.SyncInterval + purge.DefaultTimeout }

// loadConfig reads the environment through getenv and reports every problem
// at once.
func loadConfig(getenv func(string) string) (config, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	str := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	integer := func(name string, def int) int {
		v := str(name, "")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			fail("%s=%q: want an integer", name, v)
		}
		return n
	}

	c := config{
		Bucket:         str("TILES_BUCKET", ""),
		TilesPrefix:    str("TILES_PREFIX", ""),
		JournalPrefix:  str("JOURNAL_PREFIX", "_tilesieve/journal/"),
		DistributionID: str("DISTRIBUTION_ID", ""),
		CDNPathPrefix:  str("CDN_PATH_PREFIX", ""),
		Coalesce: purge.CoalesceConfig{
			Threshold: integer("COALESCE_THRESHOLD", purge.DefaultThreshold),
			Cap:       integer("COALESCE_CAP", purge.DefaultCap),
		},
		Region:   str("AWS_REGION", "us-east-1"),
		Endpoint: str("AWS_ENDPOINT_URL", ""),
	}
	if c.Bucket == "" {
		fail("TILES_BUCKET is required")
	}
	if c.TilesPrefix != "" && (!strings.HasSuffix(c.TilesPrefix, "/") || tile.ValidatePrefix(c.TilesPrefix) != nil) {
		fail("TILES_PREFIX=%q: must be empty or a directory ending in /", c.TilesPrefix)
	}
	if !strings.HasSuffix(c.JournalPrefix, "/") || tile.ValidatePrefix(c.JournalPrefix) != nil {
		fail("JOURNAL_PREFIX=%q: must be a directory ending in /", c.JournalPrefix)
	}
	if c.TilesPrefix != "" && strings.HasPrefix(c.JournalPrefix, c.TilesPrefix) {
		fail("JOURNAL_PREFIX=%q is inside TILES_PREFIX=%q: the journal must live outside the tiles", c.JournalPrefix, c.TilesPrefix)
	}
	if c.CDNPathPrefix != "" && tile.ValidatePrefix(strings.TrimPrefix(c.CDNPathPrefix, "/")) != nil {
		fail("CDN_PATH_PREFIX=%q: not a valid path prefix", c.CDNPathPrefix)
	}
	if c.Coalesce.Threshold < 1 {
		fail("COALESCE_THRESHOLD must be at least 1")
	}
	if c.Coalesce.Cap < 1 || c.Coalesce.Cap > 3000 {
		fail("COALESCE_CAP=%d: want 1-3000 (CloudFront takes at most 3000 paths per invalidation)", c.Coalesce.Cap)
	}
	if v := str("SYNC_INTERVAL", "1s"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			fail("SYNC_INTERVAL=%q: want a positive duration such as 1s", v)
		}
		c.SyncInterval = d
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail("AWS_ENDPOINT_URL=%q: want an http or https URL", c.Endpoint)
		}
	}
	if v := str("S3_FORCE_PATH_STYLE", "false"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail("S3_FORCE_PATH_STYLE=%q: want true or false", v)
		}
		c.ForcePathStyle = b
	}
	switch lv := strings.ToLower(str("LOG_LEVEL", "info")); lv {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		fail("LOG_LEVEL=%q: want debug, info, warn or error", lv)
	}
	if err := errors.Join(errs...); err != nil {
		return config{}, fmt.Errorf("sync worker configuration:\n%w", err)
	}
	return c, nil
}
