package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// purgeInstance is one tile function instance of the purge measurements:
// its own tiers and journal follower, served on its own loopback port, and
// talking to S3 through its own counting front.
type purgeInstance struct {
	URL   string
	Front *S3Counter
	Cfg   config.Tiles
	stop  func()
}

// startPurgeInstance starts an instance over l with its disk tier in dir,
// checking the journal every interval within timeout (0: the default). The
// defaults of everything else (journal prefix, Cache-Control, missing
// tiles, revalidation, origin timeout) are the product's.
func startPurgeInstance(ctx context.Context, l *LocalS3, dir string, interval, timeout time.Duration, log *slog.Logger) (*purgeInstance, error) {
	env := map[string]string{
		"TILES_BUCKET":     Bucket,
		"MEM_CACHE_BYTES":  "64MiB",
		"DISK_CACHE_DIR":   dir,
		"DISK_CACHE_BYTES": "64MiB",
		"SYNC_INTERVAL":    interval.String(),
	}
	if timeout > 0 {
		env["SYNC_TIMEOUT"] = timeout.String()
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	front := NewS3Counter(l.S3.Handler())
	a, err := app.NewWithOrigin(ctx, cfg, origin.NewWithS3(newS3Client(front.URL(), l.S3), origin.Config{Bucket: Bucket}), log)
	if err != nil {
		front.Close()
		return nil, err
	}
	url, stop, err := Serve(a.Handler)
	if err != nil {
		front.Close()
		return nil, err
	}
	return &purgeInstance{URL: url, Front: front, Cfg: cfg, stop: stop}, nil
}

// Close stops serving, then closes the S3 front.
func (p *purgeInstance) Close() {
	p.stop()
	p.Front.Close()
}

// newPurgeWorker is the worker of the purge measurements: S3 events to
// journal entries through c, without a CDN.
func newPurgeWorker(c *s3.Client, log *slog.Logger) *purge.Worker {
	return purge.NewWorker(purge.WorkerConfig{Bucket: Bucket}, purge.NewPurger(journal.New(c, Bucket, "_tilesieve/journal/", journal.Options{}), purge.PurgerConfig{}, log), log)
}

// purgeTilePut returns a PUT of version v of purgeKey to l, which answers
// the new ETag; every version has other bytes.
func purgeTilePut(ctx context.Context, l *LocalS3) func(v int) (string, error) {
	pool := tileset.NewPool(1, 128, 8_000, 8_000, 9)
	return func(v int) (string, error) {
		return s3local.Put(ctx, l.Client, Bucket, purgeKey, tileset.WithComment(pool[0], fmt.Sprintf("version %d", v)), "image/jpeg", "")
	}
}
