package tileserver_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// mbEnv is a server with MBTiles on over the in-process S3 endpoint; its
// databases are staged into stageDir, and start rebuilds the server over
// the same disk directory and staged copies, as a Lambda restart over a
// kept /tmp.
type mbEnv struct {
	*env
	cfg      servertest.Config
	stageDir string
	room     atomic.Int64 // what the stager is told is free
	probes   atomic.Int64 // GETs of a .mbtiles object's first byte
	copies   atomic.Int64 // other GETs of a .mbtiles object: downloads
	// holdCopies, when set, holds every download at S3 until its client
	// gives up.
	holdCopies atomic.Bool
	logs       *logBuffer
}

func newMBEnv(t *testing.T) *mbEnv {
	t.Helper()
	me := &mbEnv{logs: &logBuffer{}, stageDir: filepath.Join(t.TempDir(), "archives")}
	me.room.Store(1 << 30)
	me.env = newEnv(t,
		withS3Wrapper(func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".mbtiles") {
					if r.Header.Get("Range") == "bytes=0-0" {
						me.probes.Add(1)
					} else {
						me.copies.Add(1)
						if me.holdCopies.Load() {
							<-r.Context().Done()
							return
						}
					}
				}
				h.ServeHTTP(w, r)
			})
		}),
		func(_ *env, c *servertest.Config, _ *origin.Config) { me.cfg = *c })
	me.start()
	// Registered after newEnv's, so it runs first, while S3 still runs;
	// every test of a database checks that nothing of it is left open.
	t.Cleanup(func() {
		if err := me.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if open := filetree.OpenUnder(t, me.stageDir); len(open) != 0 {
			t.Errorf("staged databases open after Close: %q", open)
		}
	})
	return me
}

// start (re)builds the server: a fresh memory tier, the disk tier reopened
// over its directory, the staged copies where they are. The server it
// replaces is closed, as the process of a Lambda restart goes away.
func (me *mbEnv) start() {
	t := me.t
	var err error
	if me.srv != nil {
		if err := me.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if me.mem, err = memory.New(memory.Config{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if me.disk, err = disk.Open(disk.Config{Dir: me.disk.Dir(), MaxBytes: 64 << 20, Now: me.clock.Now}, nil); err != nil {
		t.Fatal(err)
	}
	stager := stage.Files{Origin: me.client, Dir: me.stageDir, Room: func() (int64, error) { return me.room.Load(), nil }}
	me.srv, err = servertest.New(me.cfg, servertest.Deps{Memory: me.mem, Disk: me.disk, Origin: me.client,
		Purger: purge.NewPurger(me.journal, purge.PurgerConfig{}, nil), Archives: me.client, Stager: stager,
		Logger: slog.New(slog.NewTextHandler(me.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
}

// writeMBTiles writes an MBTiles database of zooms 0..maxZ with the sqlite3
// tool: every tile random bytes after prefix, distinct per seed, gzip'd
// whole when prefix is the gzip magic.
func writeMBTiles(t *testing.T, maxZ int, seed uint64, prefix []byte, meta map[string]string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var s strings.Builder
	s.WriteString("PRAGMA page_size=4096;\nCREATE TABLE metadata (name text, value text);\nCREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\nCREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);\nBEGIN;\n")
	for k, v := range meta {
		fmt.Fprintf(&s, "INSERT INTO metadata VALUES ('%s', '%s');\n", k, strings.ReplaceAll(v, "'", "''"))
	}
	for z := range maxZ + 1 {
		for x := range 1 << z {
			for y := range 1 << z {
				b := append([]byte(nil), prefix...)
				for range 30 + rng.IntN(300) {
					b = append(b, byte(rng.Uint32()))
				}
				if bytes.HasPrefix(prefix, []byte{0x1f, 0x8b}) {
					b = gz(b[len(prefix):])
				}
				fmt.Fprintf(&s, "INSERT INTO tiles VALUES (%d, %d, %d, X'%s');\n", z, x, y, hex.EncodeToString(b))
			}
		}
	}
	s.WriteString("COMMIT;\n")
	db := filepath.Join(t.TempDir(), "x.mbtiles")
	sqlitetest.Run(t, db, s.String())
	return db
}

func (me *mbEnv) upload(name, db string) string {
	me.t.Helper()
	b, err := os.ReadFile(db)
	if err != nil {
		me.t.Fatal(err)
	}
	return me.put(name+".mbtiles", b, "application/vnd.sqlite3", "")
}

// checkTiles gets every tile and compares it with sqlite3's reading;
// xcache is the X-Cache every answer must carry.
func (me *mbEnv) checkTiles(t *testing.T, name, ext, enc string, want map[pmtiles.ZXY][]byte, xcache string) {
	t.Helper()
	for k, b := range want {
		r := me.do("GET", path(name, k, ext), "Accept-Encoding", "gzip")
		expect(t, r, 200, xcache)
		if got := body(t, r); got != string(b) {
			t.Fatalf("%s: got %d bytes %x..., want sqlite3's %d bytes", path(name, k, ext), len(got), got[:min(8, len(got))], len(b))
		}
		if got := r.Header.Get("Content-Encoding"); got != enc {
			t.Fatalf("%s: Content-Encoding: got %q, want %q", path(name, k, ext), got, enc)
		}
	}
}

// TestMBTilesServed: every tile of databases written by sqlite3 comes back
// byte for byte against sqlite3's own reading, rows flipped, with its type
// and encoding, from S3 (one download), memory, disk and after a restart
// over the kept copy (no download); NAME.json is the metadata as TileJSON,
// and the catalog lists the database.
func TestMBTilesServed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, ext, ctype, enc string
		prefix                []byte
		meta                  map[string]string
	}{
		{"png", "png", "image/png", "", []byte("\x89PNG\r\n\x1a\n"), map[string]string{"name": "Topo", "format": "png", "bounds": "-10,-20,30,40", "attribution": "© topo's"}},
		{"gzip pbf", "pbf", "application/vnd.mapbox-vector-tile", "gzip", []byte{0x1f, 0x8b, 8, 0}, map[string]string{"name": "Roads", "format": "pbf", "json": `{"vector_layers":[{"id":"roads","fields":{}}]}`}},
		{"no format row", "jpg", "image/jpeg", "", []byte{0xff, 0xd8, 0xff}, map[string]string{"name": "Sat"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			me := newMBEnv(t)
			db := writeMBTiles(t, 3, 11, tt.prefix, tt.meta)
			want := sqlitetest.ReadTiles(t, db)
			if len(want) != 85 {
				t.Fatalf("got %d tiles from sqlite3, want 85", len(want))
			}
			me.upload("topo", db)

			var k0 pmtiles.ZXY
			for k := range want {
				k0 = k
				break
			}
			r := me.do("GET", path("topo", k0, tt.ext))
			expect(t, r, 200, "MISS")
			if got := r.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type: got %q, want %q", got, tt.ctype)
			}
			me.checkTiles(t, "topo", tt.ext, tt.enc, want, "")
			me.checkTiles(t, "topo", tt.ext, tt.enc, want, "HIT-MEMORY")
			me.mem.DeletePrefix("")
			me.checkTiles(t, "topo", tt.ext, tt.enc, want, "HIT-DISK")
			if got := me.copies.Load(); got != 1 {
				t.Errorf("downloads of the database: got %d, want 1", got)
			}
			expect(t, me.do("GET", "/topo/0/0/0.webp"), 404, "")
			expect(t, me.do("GET", "/topo/5/0/0."+tt.ext), 404, "")

			// A restart over the kept /tmp: tiles from disk, a tile the disk
			// never held (purged there) from the kept copy: no download.
			if _, _, err := me.disk.DeletePrefix("topo/0/"); err != nil {
				t.Fatal(err)
			}
			me.start()
			me.checkTiles(t, "topo", tt.ext, tt.enc, want, "")
			if got := me.copies.Load(); got != 1 {
				t.Errorf("downloads after the restart: got %d, want 1", got)
			}

			r = me.do("GET", "/topo.json")
			expect(t, r, 200, "")
			var tj struct {
				Name    string    `json:"name"`
				Tiles   []string  `json:"tiles"`
				MinZoom int       `json:"minzoom"`
				MaxZoom int       `json:"maxzoom"`
				Bounds  []float64 `json:"bounds"`
				Attr    string    `json:"attribution"`
				Layers  []struct {
					ID string `json:"id"`
				} `json:"vector_layers"`
			}
			if err := json.Unmarshal([]byte(body(t, r)), &tj); err != nil {
				t.Fatal(err)
			}
			if tj.Name != tt.meta["name"] || tj.MinZoom != 0 || tj.MaxZoom != 3 || len(tj.Tiles) != 1 || !strings.HasSuffix(tj.Tiles[0], "/topo/{z}/{x}/{y}."+tt.ext) {
				t.Errorf("TileJSON: got %+v, want name %q, zooms 0..3, tiles under /topo/ in .%s", tj, tt.meta["name"], tt.ext)
			}
			if tt.meta["bounds"] != "" && fmt.Sprint(tj.Bounds) != "[-10 -20 30 40]" {
				t.Errorf("bounds: got %v, want [-10 -20 30 40]", tj.Bounds)
			}
			if tt.meta["json"] != "" && (len(tj.Layers) != 1 || tj.Layers[0].ID != "roads") {
				t.Errorf("vector_layers: got %+v, want roads", tj.Layers)
			}

			var cat docs.Catalog
			if err := json.Unmarshal([]byte(body(t, me.do("GET", "/_tilesieve/catalog"))), &cat); err != nil {
				t.Fatal(err)
			}
			if len(cat.Tilesets) != 1 || cat.Tilesets[0].Name != "topo" || cat.Tilesets[0].Kind != "mbtiles" {
				t.Errorf("catalog: got %+v, want topo of kind mbtiles", cat.Tilesets)
			}
		})
	}
}

// TestMBTilesReupload: a new version of the database (another ETag), seen
// by the revalidation of its tiles or by the purge its upload journals,
// drops the old tiles and stages the new version once.
func TestMBTilesReupload(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"revalidation", "journal purge"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			me := newMBEnv(t)
			png := []byte("\x89PNG\r\n\x1a\n")
			meta := map[string]string{"name": "v", "format": "png"}
			v1, v2 := writeMBTiles(t, 2, 1, png, meta), writeMBTiles(t, 2, 2, png, meta)
			old, fresh := sqlitetest.ReadTiles(t, v1), sqlitetest.ReadTiles(t, v2)
			me.upload("topo", v1)
			me.checkTiles(t, "topo", "png", "", old, "")
			me.upload("topo", v2)
			switch how {
			case "revalidation":
				me.clock.Advance(2 * time.Hour) // past RevalidateAfter and the archive TTL
			case "journal purge":
				// What the follower applies for the journal entry of an
				// upload of topo.mbtiles (purge derives topo/ and topo.json).
				for _, p := range []string{"topo.mbtiles", "topo/", "topo.json"} {
					if _, err := me.srv.Engine().Purge(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			me.checkTiles(t, "topo", "png", "", fresh, "")
			// The tile whose revalidation saw the change was fetched
			// across the purge it caused, so it is kept out of the tiers
			// (the old version's fills are): one pass fills the rest.
			me.checkTiles(t, "topo", "png", "", fresh, "")
			me.checkTiles(t, "topo", "png", "", fresh, "HIT-MEMORY")
			if got := me.copies.Load(); got != 2 {
				t.Errorf("downloads: got %d, want 2 (one per version)", got)
			}
			staged, err := filepath.Glob(filepath.Join(me.stageDir, "topo.mbtiles.*"))
			if err != nil || len(staged) != 1 {
				t.Errorf("staged copies: got %v (%v), want the new version only", staged, err)
			}
		})
	}
}

// TestMBTilesTooLarge: a database larger than the room the disk tier
// leaves is refused before a byte of it is read, logged once, answered 502
// for its tiles, and nothing of it is left on disk; once there is room (and
// the refusal's TTL passed) it is served.
func TestMBTilesTooLarge(t *testing.T) {
	t.Parallel()
	me := newMBEnv(t)
	db := writeMBTiles(t, 2, 5, []byte("\x89PNG\r\n\x1a\n"), map[string]string{"format": "png"})
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	me.room.Store(st.Size() - 1)
	me.upload("topo", db)
	for range 3 {
		r := me.do("GET", "/topo/1/0/0.png")
		expect(t, r, http.StatusBadGateway, "")
	}
	if got := len(me.logs.lines(`msg="archive refused" format=mbtiles`)); got != 1 {
		t.Errorf("refusals logged: got %d, want 1", got)
	}
	if got := me.logs.lines("does not fit"); len(got) != 1 {
		t.Errorf("refusal line: got %q, want one naming the room", got)
	}
	if got := me.copies.Load(); got != 0 {
		t.Errorf("downloads: got %d, want 0", got)
	}
	if left, _ := os.ReadDir(me.stageDir); len(left) != 0 {
		t.Errorf("files left in the stage directory: got %d, want 0", len(left))
	}
	me.room.Store(st.Size())
	me.clock.Advance(2 * time.Minute) // past the archive TTL
	me.checkTiles(t, "topo", "png", "", sqlitetest.ReadTiles(t, db), "")
}

// TestMBTilesConcurrentFirstRequests: requests that arrive together for a
// database not yet staged wait for one download, and all are served.
func TestMBTilesConcurrentFirstRequests(t *testing.T) {
	t.Parallel()
	me := newMBEnv(t)
	db := writeMBTiles(t, 3, 9, []byte("\x89PNG\r\n\x1a\n"), map[string]string{"format": "png"})
	want := sqlitetest.ReadTiles(t, db)
	me.upload("topo", db)
	var wg sync.WaitGroup
	errs := make(chan error, len(want))
	start := make(chan struct{})
	for k, b := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := me.do("GET", path("topo", k, "png"))
			got := new(bytes.Buffer)
			_, _ = got.ReadFrom(r.Body)
			if r.StatusCode != 200 || !bytes.Equal(got.Bytes(), b) {
				errs <- fmt.Errorf("%s: got %d and %d bytes, want 200 and %d bytes", path("topo", k, "png"), r.StatusCode, got.Len(), len(b))
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := me.copies.Load(); got != 1 {
		t.Errorf("downloads: got %d, want 1", got)
	}
	if got := me.probes.Load(); got != 1 {
		t.Errorf("probes of topo.mbtiles: got %d, want 1", got)
	}
}

// TestStageMBTilesAtStart: staging a database before its first request
// (STAGE_PREFIXES) leaves nothing for that request to download.
func TestStageMBTilesAtStart(t *testing.T) {
	t.Parallel()
	me := newMBEnv(t)
	db := writeMBTiles(t, 1, 4, []byte("\x89PNG\r\n\x1a\n"), map[string]string{"format": "png"})
	me.upload("topo", db)
	for _, tt := range []struct {
		name    string
		wantErr bool
	}{{"topo", false}, {"absent", true}, {"a/b", true}} {
		if err := me.srv.StageMBTiles(context.Background(), tt.name); (err != nil) != tt.wantErr {
			t.Errorf("StageMBTiles(%q): got %v, want error %v", tt.name, err, tt.wantErr)
		}
	}
	if got := me.copies.Load(); got != 1 {
		t.Fatalf("downloads at start: got %d, want 1", got)
	}
	me.checkTiles(t, "topo", "png", "", sqlitetest.ReadTiles(t, db), "MISS")
	if got := me.copies.Load(); got != 1 {
		t.Errorf("downloads after the first requests: got %d, want 1", got)
	}
}

// TestMBTilesFromGDAL: a database written by GDAL's MBTiles driver (a
// real tool's layout and metadata) is served byte for byte against
// sqlite3's reading, and its TileJSON says PNG tiles.
func TestMBTilesFromGDAL(t *testing.T) {
	t.Parallel()
	var bins []string
	for _, name := range []string{"gdal_create", "gdal_translate"} {
		bins = append(bins, sqlitetest.Need(t, name, "gdal-bin"))
	}
	dir := t.TempDir()
	tif, db := filepath.Join(dir, "in.tif"), filepath.Join(dir, "gdal.mbtiles")
	for _, args := range [][]string{
		{bins[0], "-of", "GTiff", "-outsize", "512", "512", "-bands", "3", "-burn", "200", "-burn", "100", "-burn", "50",
			"-a_srs", "EPSG:3857", "-a_ullr", "-20037508.34", "20037508.34", "20037508.34", "-20037508.34", tif},
		{bins[1], "-q", "-of", "MBTILES", tif, db},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", filepath.Base(args[0]), err, out)
		}
	}
	want := sqlitetest.ReadTiles(t, db)
	if len(want) == 0 {
		t.Fatal("got no tiles from sqlite3")
	}
	me := newMBEnv(t)
	me.upload("gdal", db)
	me.checkTiles(t, "gdal", "png", "", want, "")
	me.checkTiles(t, "gdal", "png", "", want, "HIT-MEMORY")
	r := me.do("GET", "/gdal.json")
	expect(t, r, 200, "")
	var tj struct {
		Format string   `json:"format"`
		Tiles  []string `json:"tiles"`
	}
	if err := json.Unmarshal([]byte(body(t, r)), &tj); err != nil {
		t.Fatal(err)
	}
	if len(tj.Tiles) != 1 || !strings.HasSuffix(tj.Tiles[0], "/gdal/{z}/{x}/{y}.png") {
		t.Errorf("TileJSON tiles: got %v, want one URL of .png tiles under /gdal/", tj.Tiles)
	}
}

// TestCloseReleasesDatabases: Close leaves no staged database open, the
// current version's nor one a new upload replaced, and a request after it
// does not open one again: a server that goes away (a test's, a local
// stack's, a host's reload) holds no file and no database/sql goroutines.
func TestCloseReleasesDatabases(t *testing.T) {
	t.Parallel()
	me := newMBEnv(t)
	png := []byte("\x89PNG\r\n\x1a\n")
	meta := map[string]string{"format": "png"}
	v1, v2 := writeMBTiles(t, 1, 1, png, meta), writeMBTiles(t, 1, 2, png, meta)
	me.upload("old", v1)
	me.upload("topo", v1)
	me.checkTiles(t, "old", "png", "", sqlitetest.ReadTiles(t, v1), "")
	me.checkTiles(t, "topo", "png", "", sqlitetest.ReadTiles(t, v1), "")
	me.upload("topo", v2)
	for _, p := range []string{"topo.mbtiles", "topo/", "topo.json"} {
		if _, err := me.srv.Engine().Purge(p); err != nil {
			t.Fatal(err)
		}
	}
	me.checkTiles(t, "topo", "png", "", sqlitetest.ReadTiles(t, v2), "")
	if got := filetree.OpenUnder(t, me.stageDir); len(got) == 0 {
		t.Fatal("no staged database open while serving: the check below cannot fail")
	}

	if err := me.srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := filetree.OpenUnder(t, me.stageDir); len(got) != 0 {
		t.Errorf("open after Close: %q, want none", got)
	}
	me.mem.DeletePrefix("")
	if _, _, err := me.disk.DeletePrefix(""); err != nil {
		t.Fatal(err)
	}
	if r := me.do("GET", "/topo/1/0/0.png"); r.StatusCode == http.StatusOK {
		t.Errorf("a database tile after Close: got 200, want an error")
	}
	if got := filetree.OpenUnder(t, me.stageDir); len(got) != 0 {
		t.Errorf("open after a request past Close: %q, want none", got)
	}
	if err := me.srv.Close(); err != nil {
		t.Errorf("a second Close: %v, want nil", err)
	}
}

// TestCloseCancelsStaging: Close does not wait out a database's download
// (bounded by minutes, for large databases): it cancels it, the request
// that waited for it is answered an error, and nothing is left open.
func TestCloseCancelsStaging(t *testing.T) {
	t.Parallel()
	me := newMBEnv(t)
	me.upload("topo", writeMBTiles(t, 1, 1, []byte("\x89PNG\r\n\x1a\n"), map[string]string{"format": "png"}))
	me.holdCopies.Store(true)
	answered := make(chan int, 1)
	go func() { answered <- me.do("GET", "/topo/1/0/0.png").StatusCode }()
	for me.copies.Load() == 0 {
		runtime.Gosched() // until the download reaches S3
	}
	closed := make(chan error, 1)
	go func() { closed <- me.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waiting for the download after 30 s")
	}
	if code := <-answered; code == http.StatusOK {
		t.Errorf("the request that waited for the download: got 200, want an error")
	}
	if open := filetree.OpenUnder(t, me.stageDir); len(open) != 0 {
		t.Errorf("open after Close: %q, want none", open)
	}
}
