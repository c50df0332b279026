package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

func setup(t *testing.T, env map[string]string, tiles int) (*s3local.Server, config.Tiles, *origin.Client) {
	t.Helper()
	s3e := s3localtest.Start(t, "tiles")
	api := s3e.Client
	for i := range tiles {
		s3localtest.Put(t, api, "tiles", fmt.Sprintf("tiles/demo/5/%d/0.png", i), []byte("tile"), "image/png", "")
	}
	base := map[string]string{"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "16MiB"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.LoadTiles(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	return s3e.Server, cfg, origin.NewWithS3(api, origin.Config{Bucket: "tiles", Prefix: "tiles/"})
}

// newApp assembles an app from cfg over o, its logs discarded.
func newApp(t *testing.T, cfg config.Tiles, o *origin.Client) *app.App {
	t.Helper()
	a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a, cfg) })
	return a
}

// closeApp closes a: checks and revalidations beside its answers end
// before the test's directories go, and nothing staged is left open.
func closeApp(t *testing.T, a *app.App, cfg config.Tiles) {
	t.Helper()
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cfg.DiskDir == "" {
		return
	}
	if open := filetree.OpenUnder(t, cfg.DiskDir); len(open) != 0 {
		t.Errorf("open after Close: %q, want none", open)
	}
}

// get answers GET path from a.
func get(a *app.App, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestStagesAtStart(t *testing.T) {
	t.Parallel()
	_, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "demo/5/"}, 20)
	a := newApp(t, cfg, o)
	if a.Staged.Staged != 20 || a.Disk.Len() != 20 {
		t.Fatalf("staged %+v, disk holds %d", a.Staged, a.Disk.Len())
	}
	rec := get(a, "/demo/5/3/0.png")
	if rec.Code != 200 || rec.Header().Get("X-Cache") != "HIT-DISK" {
		t.Fatalf("staged tile: %d %s", rec.Code, rec.Header().Get("X-Cache"))
	}
}

// TestStagingOutOfBudgetStillStarts: a slow S3 at cold start costs the
// staging budget, not the start.
func TestStagingOutOfBudgetStillStarts(t *testing.T) {
	t.Parallel()
	srv, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "demo/5/", "STAGE_BUDGET": "300ms"}, 50)
	srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/tiles/demo/5/"), Delay: 2 * time.Second})
	start := time.Now()
	var logs bytes.Buffer
	a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a, cfg) })
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("start took %v with a 300ms staging budget", d)
	}
	if !a.Staged.BudgetExhausted {
		t.Fatalf("staging report %+v: want the budget exhausted", a.Staged)
	}
	srv.Faults().Reset()
	rec := get(a, "/demo/5/7/0.png")
	if rec.Code != 200 {
		t.Fatalf("after a short staging: %d", rec.Code)
	}
}

// TestDiskThatCannotOpenStillStarts: the disk tier is optional.
func TestDiskThatCannotOpenStillStarts(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, cfg, o := setup(t, map[string]string{"DISK_CACHE_DIR": notADir + "/tiles"}, 1)
	a := newApp(t, cfg, o)
	if a.Disk != nil {
		t.Fatal("disk tier opened under a regular file")
	}
	rec := get(a, "/demo/5/0/0.png")
	if rec.Code != 200 || rec.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("without a disk tier: %d %s", rec.Code, rec.Header().Get("X-Cache"))
	}
}

// TestStagesAnArchive: STAGE_PREFIXES naming NAME.pmtiles copies the
// archive beside the disk tier, and its tiles are then read from the copy:
// with every ranged read of S3 but the first refused, they are still
// served. A process restarted over the same directory reuses the copy.
func TestStagesAnArchive(t *testing.T) {
	t.Parallel()
	srv, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "arch.pmtiles"}, 0)
	tiles := map[pmtiles.ZXY][]byte{}
	for x := range uint32(4) {
		for y := range uint32(4) {
			tiles[pmtiles.ZXY{Z: 2, X: x, Y: y}] = []byte(fmt.Sprintf("tile 2/%d/%d", x, y))
		}
	}
	archive := pmtilestest.Build(tiles, pmtilestest.Options{TileType: pmtiles.TileTypePNG})
	s3localtest.Put(t, o.S3(), "tiles", "tiles/arch.pmtiles", archive, "application/vnd.pmtiles", "")
	for round := range 2 {
		a := newApp(t, cfg, o)
		if len(a.StagedArchives) != 1 {
			t.Fatalf("round %d: staged archives %v", round, a.StagedArchives)
		}
		// Only the archive's first read (header and root) may reach S3.
		srv.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool {
			rg := r.Header.Get("Range")
			return r.Method == http.MethodGet && rg != "" && !strings.HasPrefix(rg, "bytes=0-")
		}, Status: http.StatusInternalServerError})
		for zxy, want := range tiles {
			rec := get(a, fmt.Sprintf("/arch/%d/%d/%d.png", zxy.Z, zxy.X, zxy.Y))
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), want) {
				t.Fatalf("round %d: tile %v: %d %q", round, zxy, rec.Code, rec.Body.String())
			}
		}
		srv.Faults().Reset()
		files, _ := filepath.Glob(filepath.Join(cfg.DiskDir, "archives", "*"))
		if len(files) != 1 {
			t.Fatalf("round %d: archive files %v, want one", round, files)
		}
		closeApp(t, a, cfg) // the process of the round goes away
	}
}

// TestOriginSettingsReachTheServer: MAX_ORIGIN_FETCHES bounds the fetches
// one instance runs at once, as composed from the configuration.
func TestOriginSettingsReachTheServer(t *testing.T) {
	t.Parallel()
	srv, cfg, o := setup(t, map[string]string{"MAX_ORIGIN_FETCHES": "2", "DISK_CACHE_BYTES": "0"}, 10)
	a := newApp(t, cfg, o)
	srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/demo/"), Delay: time.Hour})
	done := make(chan struct{})
	for i := range 10 {
		go func() {
			defer func() { done <- struct{}{} }()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			a.Handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "GET", fmt.Sprintf("/demo/5/%d/0.png", i), nil))
		}()
	}
	for range 10 {
		<-done
	}
	if p := a.Stats().Handler.OriginInFlightPeak; p != 2 {
		t.Errorf("%d origin fetches at once with MAX_ORIGIN_FETCHES=2", p)
	}
	// The client New builds holds no more sockets than fetches
	// (origin's TestReadsHoldAtMostMaxConns).
	if n := app.OriginConfig(cfg).MaxConns; n != 2 {
		t.Errorf("origin MaxConns %d with MAX_ORIGIN_FETCHES=2", n)
	}
}

// writeMBTiles writes an MBTiles database of zoom 1 with the sqlite3 tool
// and returns its bytes and its tiles by XYZ path.
func writeMBTiles(t *testing.T) ([]byte, map[string][]byte) {
	t.Helper()
	bin := sqlitetest.Need(t, "sqlite3", "sqlite3")
	script := "CREATE TABLE metadata (name text, value text);\nCREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\nINSERT INTO metadata VALUES ('format', 'png');\n"
	tiles := map[string][]byte{}
	for x := range 2 {
		for row := range 2 {
			b := []byte(fmt.Sprintf("\x89PNG\r\n\x1a\ntile 1/%d/row %d", x, row))
			script += fmt.Sprintf("INSERT INTO tiles VALUES (1, %d, %d, X'%x');\n", x, row, b)
			tiles[fmt.Sprintf("/topo/1/%d/%d.png", x, 1-row)] = b
		}
	}
	db := filepath.Join(t.TempDir(), "topo.mbtiles")
	cmd := exec.Command(bin, "-batch", db)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	body, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	return body, tiles
}

// TestStagesAnMBTiles: STAGE_PREFIXES naming NAME.mbtiles stages the
// database at start and its tiles are read from the copy (no other GET of
// it reaches S3); a process restarted over the same directory reuses the
// copy; a disk tier that leaves no room for it refuses it, 502 for its
// tiles and nothing left in the directory.
func TestStagesAnMBTiles(t *testing.T) {
	t.Parallel()
	body, tiles := writeMBTiles(t)
	for _, tt := range []struct {
		name, diskBytes string
		staged          bool
	}{
		{"fits", "16MiB", true},
		{"no room", "100000GiB", false}, // past any free space: Spare is negative
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "topo.mbtiles", "DISK_CACHE_BYTES": tt.diskBytes}, 0)
			s3localtest.Put(t, o.S3(), "tiles", "tiles/topo.mbtiles", body, "application/vnd.sqlite3", "")
			for round := range 2 {
				var logs bytes.Buffer
				a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.NewJSONHandler(&logs, nil)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { closeApp(t, a, cfg) })
				if got := len(a.StagedArchives) == 1; got != tt.staged {
					t.Fatalf("round %d: staged archives %v, want staged %v", round, a.StagedArchives, tt.staged)
				}
				// From here on, only a probe of the database's first byte may
				// reach S3: no download.
				srv.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool {
					return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".mbtiles") && r.Header.Get("Range") != "bytes=0-0"
				}, Status: http.StatusInternalServerError})
				for p, want := range tiles {
					rec := get(a, p)
					switch {
					case tt.staged && (rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), want)):
						t.Fatalf("round %d: %s: got %d %q, want 200 %q", round, p, rec.Code, rec.Body.String(), want)
					case !tt.staged && rec.Code != http.StatusBadGateway:
						t.Fatalf("round %d: %s: got %d, want 502", round, p, rec.Code)
					}
				}
				srv.Faults().Reset()
				files, _ := filepath.Glob(filepath.Join(cfg.DiskDir, "archives", "*"))
				if want := map[bool]int{true: 1, false: 0}[tt.staged]; len(files) != want {
					t.Fatalf("round %d: staged files %v, want %d", round, files, want)
				}
				if !tt.staged && !strings.Contains(logs.String(), "does not fit") {
					t.Errorf("round %d: log: got %s, want the refusal saying it does not fit", round, logs.String())
				}
				closeApp(t, a, cfg) // the process of the round goes away
			}
		})
	}
}

// TestStagedArchiveRefusedAtStart: an archive staged at start is opened
// there, as its first request would open it, so a truncated one is
// reported at start in one log line, is not counted as staged, and its
// tiles then answer without a second report.
func TestStagedArchiveRefusedAtStart(t *testing.T) {
	t.Parallel()
	_, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "bad.pmtiles"}, 0)
	whole := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("tile 0/0/0")}, pmtilestest.Options{TileType: pmtiles.TileTypePNG})
	s3localtest.Put(t, o.S3(), "tiles", "tiles/bad.pmtiles", whole[:len(whole)-4], "application/vnd.pmtiles", "")
	var logs bytes.Buffer
	a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a, cfg) })
	refused := func() int { return strings.Count(logs.String(), `msg="archive refused"`) }
	if n := refused(); n != 1 {
		t.Fatalf("log at start: got %d lines 'archive refused', want 1:\n%s", n, logs.String())
	}
	if len(a.StagedArchives) != 0 {
		t.Fatalf("staged archives: got %v, want none (the archive is refused)", a.StagedArchives)
	}
	rec := get(a, "/bad/0/0/0.png")
	if rec.Code != http.StatusBadGateway {
		t.Fatalf("tile of a refused archive: got %d, want 502", rec.Code)
	}
	if n := refused(); n != 1 {
		t.Fatalf("log after a tile: got %d lines 'archive refused', want still 1", n)
	}
}

// TestJournalReadAtInitOnlyWhenNeeded: tiers that start with nothing a purge
// could concern (no disk tier, or an empty one without a saved position)
// do not wait for the journal at init: with S3 holding the journal's head,
// init ends and the first request is answered; the check then completes
// beside them. A disk tier kept with its position, or staging, reads the
// journal first, as before (here until SYNC_TIMEOUT).
func TestJournalReadAtInitOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		position bool // a journal position saved in the disk tier's directory
		waits    bool // init waits for the journal
	}{
		{name: "no disk tier", env: map[string]string{"DISK_CACHE_BYTES": "0"}},
		{name: "empty disk tier"},
		{name: "kept disk tier", position: true, waits: true},
		{name: "staging", env: map[string]string{"STAGE_PREFIXES": "demo/5/"}, waits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"SYNC_TIMEOUT": "100ms"}
			for k, v := range tc.env {
				env[k] = v
			}
			srv, cfg, o := setup(t, env, 2)
			ctx := context.Background()
			// A purge recorded just before the start, of other tiles.
			j := journal.New(o.S3(), cfg.Bucket, cfg.JournalPrefix, journal.Options{})
			if _, err := j.Append(ctx, []string{"other/"}, "test"); err != nil {
				t.Fatal(err)
			}
			var heads atomic.Int64
			release := make(chan struct{})
			srv.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/head.json") {
					heads.Add(1)
					return true
				}
				return false
			}, Hold: func() { <-release }})
			if tc.position {
				p := journal.PositionFile{Path: filepath.Join(cfg.DiskDir, journal.PositionFileName)}
				if err := p.Save(journal.Position{}); err != nil {
					t.Fatal(err)
				}
			}
			a, err := app.NewWithOrigin(ctx, cfg, o, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeApp(t, a, cfg) })
			if got, want := a.Init.JournalHead >= 100*time.Millisecond, tc.waits; got != want {
				t.Errorf("init waited for the journal (%v): got %v, want %v", a.Init.JournalHead, got, want)
			}
			if tc.waits && heads.Load() == 0 {
				t.Error("init read no journal head")
			}
			serve := func() (int, string) {
				rec := httptest.NewRecorder()
				a.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/demo/5/1/0.png", nil))
				return rec.Code, rec.Header().Get("X-Cache")
			}
			if !tc.waits {
				if code, x := serve(); code != http.StatusOK || x != "MISS" {
					t.Fatalf("first request, the journal's head held: got %v %s, want %v MISS", code, x, http.StatusOK)
				}
			}
			close(release)
			a.Drain()
			if !tc.waits {
				if s := a.Follower.Stats(); s.LastOK.IsZero() {
					t.Errorf("follower after the first request: got %+v, want a good check", s)
				}
				if code, x := serve(); code != http.StatusOK || x != "HIT-MEMORY" {
					t.Errorf("second request: got %v %s, want %v HIT-MEMORY", code, x, http.StatusOK)
				}
			}
		})
	}
}

// TestColdStartDropsOnlyWhatItHolds: a cold start with staging reads the
// journal before it stages, over a disk tier that holds nothing and has no
// saved position (every cold start on Lambda): there is nothing to drop, so
// nothing is dropped, no purge-all is counted and nothing is logged as a
// warning. A disk tier that holds tiles without a saved position (a process
// that stopped before it saved one) is still dropped whole, with the
// warning.
func TestColdStartDropsOnlyWhatItHolds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kept bool // a tile left in the disk tier's directory, no position
	}{
		{name: "empty disk tier"},
		{name: "tiles kept without a position", kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, cfg, o := setup(t, map[string]string{"STAGE_PREFIXES": "demo/5/"}, 3)
			if tc.kept {
				d, err := disk.Open(disk.Config{Dir: cfg.DiskDir, MaxBytes: 1 << 20}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Put("demo/6/0/0.png", &tile.Tile{Body: []byte("old"), ContentType: "image/png", ETag: `"old"`}); err != nil {
					t.Fatal(err)
				}
			}
			var logs syncbuf.Buffer
			a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeApp(t, a, cfg) })
			var wantDrops uint64
			if tc.kept {
				wantDrops = 1
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if got := a.Follower.Stats().PurgeAlls; got != wantDrops || warned != tc.kept {
				t.Errorf("purge-alls %d, warned %v; want %d, %v; logs:\n%s", got, warned, wantDrops, tc.kept, logs.String())
			}
			if a.Staged.Staged != 3 {
				t.Errorf("staged %+v, want 3 tiles", a.Staged)
			}
			if _, ok := a.Disk.Get("demo/6/0/0.png"); ok {
				t.Error("the tile kept without a position is still served from disk")
			}
		})
	}
}
