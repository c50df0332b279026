package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// start brings the tiers up to date with the purge journal and stages what
// STAGE_PREFIXES and STAGE_MANIFEST name. An entry NAME.pmtiles or
// NAME.mbtiles (any format's object) names a tileset archive, copied whole
// beside the disk tier, its tiles then read from the copy.
func (a *App) start(ctx context.Context, cfg config.Tiles, log *slog.Logger) {
	var tilePrefixes, archiveKeys []string
	for _, p := range cfg.StagePrefixes {
		if spec, _, ok := formats.Of(p); ok && (spec.Image || !strings.Contains(p, "/")) {
			archiveKeys = append(archiveKeys, p)
		} else {
			tilePrefixes = append(tilePrefixes, p)
		}
	}
	pos := a.position(cfg)
	staging := a.Disk != nil && (len(tilePrefixes) > 0 || cfg.StageManifest != "" || len(archiveKeys) > 0)
	empty := emptyTiers(a.Disk, pos)
	if !staging && empty {
		// Tiers that hold nothing need no purge before the first answer:
		// the first check runs beside init and the first requests instead
		// of holding them up (see follower.Follower.Defer for why that keeps
		// every purge).
		a.Follower.Defer(time.Now())
		a.Engine.CheckBeside(ctx)
		return
	}
	a.readJournal(ctx, empty, log)
	if !staging {
		return
	}
	began := time.Now()
	budget := cmp.Or(cfg.StageBudget, stage.DefaultBudget)
	a.stageArchives(ctx, budget, archiveKeys, log)
	a.Staged = stage.Run(ctx, stage.Config{
		Prefixes: tilePrefixes,
		Manifest: cfg.StageManifest,
		Budget:   max(time.Millisecond, budget-time.Since(began)), // one budget for both
	}, a.Origin, a.Disk, log)
	a.Init.Staging = time.Since(began)
	// Purges recorded while staging copied tiles apply to them before the
	// first answer.
	if err := a.Follower.Sync(ctx); err != nil {
		log.Warn("purge journal not read after staging; staged copies are revalidated until it is", "err", err)
	}
}

// readJournal reads the journal before the disk tier is trusted or staging
// begins: a disk tier kept from an earlier process gets every purge it
// missed (or is dropped), and the position saved with it moves on with it.
// Over tiers that hold nothing (a cold start that stages) there is nothing
// to drop: the head read becomes the position.
func (a *App) readJournal(ctx context.Context, empty bool, log *slog.Logger) {
	start := a.Follower.Start
	if empty {
		start = a.Follower.StartEmpty
	}
	began := time.Now()
	err := start(ctx)
	a.Init.JournalHead = time.Since(began)
	if err != nil {
		// Until a check succeeds, cached copies are trusted only for
		// SYNC_INTERVAL + SYNC_TIMEOUT after they were fetched; older ones
		// are revalidated with S3.
		log.Warn("purge journal not read at start; cached copies are revalidated until it is", "err", err)
	}
}

// emptyTiers reports whether the tiers start with nothing a purge could
// concern: no disk tier, or one that holds no tile and no saved journal
// position (a position file means a disk tier kept from an earlier
// process, which is read against the journal first, as is one that cannot
// be read).
func emptyTiers(d *disk.Store, pos journal.PositionStore) bool {
	if d == nil {
		return true
	}
	if d.Len() > 0 || pos == nil {
		return false
	}
	_, saved, err := pos.Load()
	return err == nil && !saved
}

// stageArchives copies the named archives beside the disk tier within the
// staging budget, each only if it fits the space the disk tier will never
// claim, and opens each as its first request would (so a malformed one is
// reported at start, once, by the probe). A format read whole is staged by
// that opening; one read by range is copied first, then read from the
// copy. One that does not fit, or fails, is read from S3 by range.
func (a *App) stageArchives(ctx context.Context, budget time.Duration, keys []string, log *slog.Logger) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	for _, key := range keys {
		spec, name, _ := formats.Of(key)
		if spec.Staging == formats.Ranged && !a.copyArchive(ctx, key, name, log) {
			continue
		}
		if err := a.Archives.Open(ctx, key); err != nil {
			switch {
			case ctx.Err() != nil && spec.Staging == formats.Whole:
				// Past the budget the copy goes on, and requests wait for it.
				log.Warn("archive still staging past the staging budget; its first requests wait for it", "key", key)
			case !archive.IsRefused(err): // a refusal is logged once, by the probe
				log.Warn("archive not staged at start", "key", key, "err", err)
			}
			continue
		}
		a.StagedArchives = append(a.StagedArchives, key)
	}
}

// copyArchive copies the archive key whole beside the disk tier and has
// the archive origin read tileset name from the copy while S3 holds that
// version.
func (a *App) copyArchive(ctx context.Context, key, name string, log *slog.Logger) bool {
	room, err := a.Disk.Spare()
	if err != nil {
		log.Warn("archive not staged", "key", key, "err", err)
		return false
	}
	c, objectKey, adir, ok := a.locate(key, filepath.Join(a.Disk.Dir(), "archives"))
	if !ok {
		log.Warn("archive not staged: its source is a directory, without the archive", "key", key)
		return false
	}
	f, etag, err := stage.Archive(ctx, c, objectKey, adir, room)
	if err != nil {
		log.Warn("archive not staged; its tiles are read from S3 by range", "key", key, "err", err)
		return false
	}
	a.archiveFiles = append(a.archiveFiles, f)
	a.Archives.UseLocal(name, etag, formats.ReaderAt(f))
	log.Info("archive staged", "key", key, "etag", etag, "path", f.Name())
	return true
}

// locate returns the client an archive key is staged from, its key there,
// and the directory of its copy: a source's archives are kept apart, so
// that copies of one key in two buckets never replace each other. ok is
// false when the key's source has no such archive.
func (a *App) locate(key, dir string) (c *origin.Client, objectKey, adir string, ok bool) {
	c, objectKey, ok = a.Router.Locate(key)
	if c == a.Origin {
		return c, key, dir, true
	}
	return c, objectKey, filepath.Join(dir, "sources", sources.Name(key)), ok
}

// stager stages the objects of formats read whole beside the disk tier,
// within the space the disk tier will never claim; nil without a disk
// tier (those formats are then off).
func (a *App) stager() archive.Stager {
	if a.Disk == nil {
		return nil
	}
	return routedStager{r: a.Router, dir: filepath.Join(a.Disk.Dir(), "archives"), room: a.Disk.Spare}
}

// routedStager stages an object from its tileset's source.
type routedStager struct {
	r    *origin.Router
	dir  string
	room func() (int64, error)
}

func (s routedStager) Stage(ctx context.Context, key, etag string, size int64) (string, error) {
	c, objectKey, ok := s.r.Locate(key)
	if !ok {
		return "", fmt.Errorf("app: stage %s: %w", key, tile.ErrNotFound)
	}
	f := stage.Files{Origin: c, Dir: s.dir, Room: s.room}
	if c == s.r.Default() {
		return f.Stage(ctx, key, etag, size)
	}
	f.Dir = filepath.Join(s.dir, "sources", sources.Name(key))
	return f.Stage(ctx, objectKey, etag, size)
}
