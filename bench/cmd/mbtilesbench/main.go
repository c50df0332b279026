// Command mbtilesbench compares the two pure-Go SQLite libraries an MBTiles
// reader can use without cgo, modernc.org/sqlite (the product's choice,
// through shared/formats/mbtiles) and github.com/ncruces/go-sqlite3, and writes the
// mbtiles section of docs/BENCHMARKS.md (between <!-- mbtiles:begin --> and
// <!-- mbtiles:end -->). It is what `make bench-mbtiles` runs:
//
//	cd bench && go run ./cmd/mbtilesbench -out ../docs/BENCHMARKS.md
//
// Three measurements, each side by side in one run:
//
//   - bootstrap size: the tile function's main package copied into a
//     scratch package of this module and built as Lambda builds it
//     (CGO_ENABLED=0 GOOS=linux GOARCH=arm64 -trimpath -tags lambda.norpc
//     -ldflags='-s -w'), plain and with a reader reachable from main (a
//     blank import alone lets the linker drop a database/sql driver's
//     methods, so the probe opens a database when an environment variable
//     is set, which it never is);
//   - cold start added: a tiny program that opens a database and reads one
//     tile, run as a fresh process in interleaved rounds, against one that
//     only reads the file's first bytes;
//   - tile read latency: ns per random tile of a full z0-7 pyramid, through
//     mbtiles.OpenDriver on each library, in interleaved rounds, as medians
//     and their ratio, from one goroutine and from GOMAXPROCS, beside a
//     CPU-only floor that shows how far the machine let parallel work scale.
package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
)

type options struct {
	out, root      string
	rounds, starts int
	zoom           int
	benchtime      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "../docs/BENCHMARKS.md", "markdown file whose mbtiles section is (re)written")
	flag.StringVar(&o.root, "root", "..", "the product module's root")
	flag.IntVar(&o.rounds, "rounds", 7, "interleaved rounds of the read benchmark")
	flag.IntVar(&o.starts, "starts", 40, "fresh processes per program for the cold start")
	flag.IntVar(&o.zoom, "zoom", 7, "deepest zoom of the benchmark database (full pyramid)")
	flag.DurationVar(&o.benchtime, "benchtime", 500*time.Millisecond, "time per read benchmark run")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mbtilesbench: ")
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// lib is one SQLite library under test.
type lib struct {
	name, module, importPath, driver string
}

var libs = []lib{
	{"modernc.org/sqlite", "modernc.org/sqlite", "modernc.org/sqlite", "sqlite"},
	{"ncruces/go-sqlite3", "github.com/ncruces/go-sqlite3", "github.com/ncruces/go-sqlite3/driver", "sqlite3"},
}

type sizeRow struct {
	variant string
	bytes   int64
}

type coldRow struct {
	variant string
	median  time.Duration
	min     time.Duration
	max     time.Duration
}

// floorName is the CPU-only row of the read table.
const floorName = "floor: SHA-256 of 4 KiB (CPU only)"

type readRow struct {
	lib      string
	parallel bool
	median   float64 // ns per tile
	rounds   []float64
}

func run(o options) error {
	work, err := os.MkdirTemp(".", "_mbtilesbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	db := filepath.Join(work, "bench.mbtiles")
	tiles, err := writeDB(db, o.zoom)
	if err != nil {
		return err
	}
	log.Printf("database: z0-%d, %d tiles", o.zoom, tiles)
	sizes, err := measureSizes(o, work)
	if err != nil {
		return err
	}
	cold, err := measureCold(o, work, db)
	if err != nil {
		return err
	}
	reads, err := measureReads(o, db, false)
	if err != nil {
		return err
	}
	par, err := measureReads(o, db, true)
	if err != nil {
		return err
	}
	reads = append(reads, par...)
	versions := map[string]string{}
	for _, l := range libs {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", l.module).Output()
		if err != nil {
			return fmt.Errorf("go list -m %s: %w", l.module, err)
		}
		versions[l.name] = strings.TrimSpace(string(out))
	}
	body := render(e2e.ThisMachine(nil), versions, o, tiles, sizes, cold, reads)
	return docsection.Write(o.out, "mbtiles", body)
}

// writeDB writes a full pyramid of random tiles, 200 B to 4 KiB each, in
// the tiles table layout with its unique index.
func writeDB(path string, maxZoom int) (int, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	for _, s := range []string{
		`PRAGMA journal_mode = OFF`,
		`CREATE TABLE metadata (name text, value text)`,
		`INSERT INTO metadata VALUES ('name', 'bench'), ('format', 'png'), ('minzoom', '0'), ('maxzoom', '` + fmt.Sprint(maxZoom) + `')`,
		`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
	} {
		if _, err := db.Exec(s); err != nil {
			return 0, err
		}
	}
	tx, err := db.Begin()
	if err != nil {
		return 0, err
	}
	ins, err := tx.Prepare(`INSERT INTO tiles VALUES (?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(7, 7))
	n := 0
	for z := 0; z <= maxZoom; z++ {
		for x := 0; x < 1<<z; x++ {
			for y := 0; y < 1<<z; y++ {
				b := make([]byte, 200+r.IntN(4<<10-200))
				copy(b, "\x89PNG\r\n\x1a\n")
				for i := 8; i < len(b); i++ {
					b[i] = byte(r.Uint32())
				}
				if _, err := ins.Exec(z, x, y, b); err != nil {
					return 0, err
				}
				n++
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	if _, err := db.Exec(`CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row)`); err != nil {
		return 0, err
	}
	return n, db.Close()
}

// probe is the body of a database/sql reader: the queries mbtiles.Open
// makes, then one tile.
const probe = `
func probe(path string) int {
	db, err := sql.Open(%q, "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name IN ('tiles', 'metadata')").Scan(&n); err != nil || n != 2 {
		panic(fmt.Sprint("schema: ", n, err))
	}
	rows, err := db.Query("SELECT name, value FROM metadata")
	if err != nil {
		panic(err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			panic(err)
		}
	}
	rows.Close()
	var b []byte
	if err := db.QueryRow("SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?", 3, 2, 5).Scan(&b); err != nil {
		panic(err)
	}
	return len(b)
}
`

// measureSizes builds the tile bootstrap plain and with each reader.
func measureSizes(o options, work string) ([]sizeRow, error) {
	src := filepath.Join(o.root, "functions", "tiles")
	variants := []struct {
		name, extra string
	}{
		{"tile bootstrap as built today", ""},
		{"+ shared/formats/mbtiles (modernc.org/sqlite)", `package main

import (
	"context"
	"os"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
)

func init() {
	if p := os.Getenv("MBTILES_SIZE_PROBE"); p != "" {
		d, err := mbtiles.Open(context.Background(), p)
		if err == nil {
			b, _ := d.Tile(context.Background(), 0, 0, 0)
			println(len(b), d.ContentType())
		}
	}
}
`},
	}
	for _, l := range libs {
		variants = append(variants, struct{ name, extra string }{
			"+ a database/sql reader on " + l.name,
			fmt.Sprintf("package main\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n\t\"os\"\n\n\t_ %q\n)\n\nfunc init() {\n\tif p := os.Getenv(\"MBTILES_SIZE_PROBE\"); p != \"\" {\n\t\tprintln(probe(p))\n\t}\n}\n", l.importPath) +
				fmt.Sprintf(probe, l.driver),
		})
	}
	var rows []sizeRow
	for i, v := range variants {
		dir := filepath.Join(work, fmt.Sprintf("size%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		// The command's own files, every one (its tests stay behind).
		files, err := filepath.Glob(filepath.Join(src, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			f = filepath.Base(f)
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return nil, err
			}
		}
		if v.extra != "" {
			if err := os.WriteFile(filepath.Join(dir, "probe.go"), []byte(v.extra), 0o644); err != nil {
				return nil, err
			}
		}
		bin := filepath.Join(work, fmt.Sprintf("bootstrap%d", i))
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", bin, "./"+dir)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %w: %s", v.name, err, out)
		}
		st, err := os.Stat(bin)
		if err != nil {
			return nil, err
		}
		log.Printf("size: %s: %d bytes", v.name, st.Size())
		rows = append(rows, sizeRow{v.name, st.Size()})
	}
	return rows, nil
}

// measureCold builds one program per library (and a floor that reads the
// file's header and nothing else) for this machine and runs each as a
// fresh process, interleaved.
func measureCold(o options, work, db string) ([]coldRow, error) {
	progs := []struct{ name, src string }{
		{"floor: read the first 100 bytes", "package main\n\nimport (\n\t\"io\"\n\t\"os\"\n)\n\nfunc main() {\n\tf, err := os.Open(os.Args[1])\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tb := make([]byte, 100)\n\tif _, err := io.ReadFull(f, b); err != nil {\n\t\tpanic(err)\n\t}\n}\n"},
		{"mbtiles.Open + one Tile (modernc.org/sqlite)", "package main\n\nimport (\n\t\"context\"\n\t\"os\"\n\n\t\"github.com/tilesieve/tilesieve/shared/formats/mbtiles\"\n)\n\nfunc main() {\n\td, err := mbtiles.Open(context.Background(), os.Args[1])\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tif _, err := d.Tile(context.Background(), 3, 2, 2); err != nil {\n\t\tpanic(err)\n\t}\n}\n"},
	}
	for _, l := range libs {
		progs = append(progs, struct{ name, src string }{
			"database/sql open + one tile (" + l.name + ")",
			fmt.Sprintf("package main\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n\t\"os\"\n\n\t_ %q\n)\n\nfunc main() { probe(os.Args[1]) }\n", l.importPath) + fmt.Sprintf(probe, l.driver),
		})
	}
	bins := make([]string, len(progs))
	for i, p := range progs {
		dir := filepath.Join(work, fmt.Sprintf("cold%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(p.src), 0o644); err != nil {
			return nil, err
		}
		bins[i] = filepath.Join(work, fmt.Sprintf("cold%d.bin", i))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bins[i], "./"+dir)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %w: %s", p.name, err, out)
		}
	}
	times := make([][]time.Duration, len(progs))
	for r := -1; r < o.starts; r++ { // round -1 warms the page cache
		for i, bin := range bins {
			start := time.Now()
			if out, err := exec.Command(bin, db).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("%s: %w: %s", progs[i].name, err, out)
			}
			if r >= 0 {
				times[i] = append(times[i], time.Since(start))
			}
		}
	}
	var rows []coldRow
	for i, p := range progs {
		slices.Sort(times[i])
		rows = append(rows, coldRow{p.name, times[i][len(times[i])/2], times[i][0], times[i][len(times[i])-1]})
		log.Printf("cold: %s: median %v", p.name, rows[i].median)
	}
	return rows, nil
}

// measureReads times random tile reads through shared/formats/mbtiles on each
// library, in interleaved rounds: from one goroutine, or from GOMAXPROCS
// goroutines sharing the DB (b.RunParallel).
func measureReads(o options, path string, parallel bool) ([]readRow, error) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 11))
	coords := make([][3]uint32, 1<<16)
	for i := range coords {
		z := uint32(r.IntN(o.zoom + 1))
		coords[i] = [3]uint32{z, uint32(r.IntN(1 << z)), uint32(r.IntN(1 << z))}
	}
	dbs := make([]*mbtiles.DB, len(libs))
	for i, l := range libs {
		d, err := mbtiles.OpenDriver(ctx, l.driver, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		defer d.Close()
		dbs[i] = d
	}
	if flag.Lookup("test.benchtime") == nil {
		testing.Init()
	}
	if err := flag.Set("test.benchtime", o.benchtime.String()); err != nil {
		return nil, err
	}
	type reader struct {
		name string
		read func(n int) error
	}
	var readers []reader
	for i, d := range dbs {
		readers = append(readers, reader{libs[i].name, func(n int) error {
			c := coords[n%len(coords)]
			_, err := d.Tile(ctx, uint8(c[0]), c[1], c[2])
			return err
		}})
	}
	// The floor is CPU work alone: how it scales from one goroutine to
	// GOMAXPROCS shows what the machine gave parallel work in this run.
	block := make([]byte, 4<<10)
	readers = append(readers, reader{floorName, func(n int) error {
		sha256.Sum256(block)
		return nil
	}})
	rows := make([]readRow, len(readers))
	for round := 0; round < o.rounds; round++ {
		for i, rd := range readers {
			var failed atomic.Pointer[error]
			read := func(n int) bool {
				if err := rd.read(n); err != nil {
					failed.CompareAndSwap(nil, &err)
					return false
				}
				return true
			}
			res := testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				if parallel {
					var next atomic.Int64
					b.RunParallel(func(pb *testing.PB) {
						for n := int(next.Add(1) * 7919); pb.Next(); n++ {
							if !read(n) {
								return
							}
						}
					})
					return
				}
				for n := 0; b.Loop(); n++ {
					if !read(n) {
						return
					}
				}
			})
			if err := failed.Load(); err != nil {
				return nil, fmt.Errorf("%s: %w", rd.name, *err)
			}
			rows[i].lib, rows[i].parallel = rd.name, parallel
			rows[i].rounds = append(rows[i].rounds, float64(res.T.Nanoseconds())/float64(res.N))
		}
	}
	for i := range rows {
		s := slices.Clone(rows[i].rounds)
		slices.Sort(s)
		rows[i].median = s[len(s)/2]
		log.Printf("read: %s (parallel %v): median %.0f ns/tile", rows[i].lib, parallel, rows[i].median)
	}
	return rows, nil
}

func render(m e2e.Machine, versions map[string]string, o options, tiles int, sizes []sizeRow, cold []coldRow, reads []readRow) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## MBTiles: the SQLite library\n\n")
	p("Regenerate with `make bench-mbtiles`, which runs `cd bench && go run ./cmd/mbtilesbench -out ../docs/BENCHMARKS.md`. ")
	p("Machine: %s, `nproc` = %d, %s. Libraries: modernc.org/sqlite %s (shared/formats/mbtiles uses it), github.com/ncruces/go-sqlite3 %s (bench module only). ",
		m.GoVersion, m.NProc, m.OS, versions[libs[0].name], versions[libs[1].name])
	p("The database: a full z0-%d pyramid of %d random tiles of 200 B to 4 KiB in the tiles table with its unique index.\n\n", o.zoom, tiles)

	p("### Bootstrap size (linux/arm64, stripped)\n\n")
	p("The tile function's main package built as Lambda builds it (`CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -tags lambda.norpc -ldflags='-s -w'`), plain and with a reader reachable from `main` (a blank import alone lets the linker drop a database/sql driver's methods). Sizes move in steps of 64 KiB, the segment alignment of linux/arm64 binaries, so readers that differ by less land on the same size.\n\n")
	p("| bootstrap | bytes | MiB | added |\n|---|---:|---:|---:|\n")
	for _, s := range sizes {
		p("| %s | %d | %.2f | %+.2f MiB |\n", s.variant, s.bytes, float64(s.bytes)/(1<<20), float64(s.bytes-sizes[0].bytes)/(1<<20))
	}

	p("\n### Cold start added (a fresh process opens the database and reads one tile)\n\n")
	p("Each program run %d times as a fresh process (linux/amd64, this machine), the programs interleaved, after one warm-up round; wall time of the whole process as `exec` sees it.\n\n", o.starts)
	p("| program | median | min | max | added to the floor (median) |\n|---|---:|---:|---:|---:|\n")
	for _, c := range cold {
		p("| %s | %s | %s | %s | %s |\n", c.variant, ms(c.median), ms(c.min), ms(c.max), ms(c.median-cold[0].median))
	}

	p("\n### Tile read latency (random tiles)\n\n")
	p("`mbtiles.OpenDriver(ctx, driver, path)` on each library, the same random z/x/y sequence, %d interleaved rounds of `testing.Benchmark` (benchtime %v), from one goroutine and from GOMAXPROCS = %d goroutines sharing one DB (`b.RunParallel`; ns per tile is wall time over all goroutines).\n\n", o.rounds, o.benchtime, runtime.GOMAXPROCS(0))
	p("| library | goroutines | median ns/tile | rounds (ns/tile) | vs modernc.org/sqlite |\n|---|---|---:|---|---:|\n")
	base := map[bool]float64{}
	for _, r := range reads {
		if r.lib == libs[0].name {
			base[r.parallel] = r.median
		}
	}
	for _, r := range reads {
		var rs []string
		for _, v := range r.rounds {
			rs = append(rs, fmt.Sprintf("%.0f", v))
		}
		g := "one"
		if r.parallel {
			g = "GOMAXPROCS"
		}
		vs := fmt.Sprintf("%.2fx", r.median/base[r.parallel])
		if r.lib == floorName {
			vs = ""
		}
		p("| %s | %s | %.0f | %s | %s |\n", r.lib, g, r.median, strings.Join(rs, ", "), vs)
	}
	speedup := func(name string) float64 {
		var one, all float64
		for _, r := range reads {
			if r.lib == name && r.parallel {
				all = r.median
			} else if r.lib == name {
				one = r.median
			}
		}
		return one / all
	}
	p("\nFrom one goroutine to GOMAXPROCS = %d, items per second grew %.2fx for the CPU-only floor, %.2fx for %s and %.2fx for %s. "+
		"The floor says what this shared machine gave parallel work during the run (%d.00x on idle cores); the readers' growth is only meaningful next to it.\n",
		runtime.GOMAXPROCS(0), speedup(floorName), speedup(libs[0].name), libs[0].name, speedup(libs[1].name), libs[1].name, runtime.GOMAXPROCS(0))
	nc := func(parallel bool) float64 {
		for _, r := range reads {
			if r.lib == libs[1].name && r.parallel == parallel {
				return r.median
			}
		}
		return 0
	}
	p("\n**The choice.** shared/formats/mbtiles uses %s. Its bootstrap is %.2f MiB smaller than with %s (%+.2f MiB vs %+.2f MiB on the tile function), "+
		"the cold start a fresh process adds is %s with it and %s with %s (medians of the two database/sql programs over the floor's), "+
		"and %s reads a tile in %.2fx modernc's time from one goroutine (%.0f ns vs %.0f ns) and %.2fx from all: "+
		"a difference paid only on a memory-tier miss, next to a whole invocation (see the invoke section), while the bootstrap is paid at every cold start and deployment.\n\n",
		libs[0].name, float64(sizes[3].bytes-sizes[2].bytes)/(1<<20), libs[1].name,
		float64(sizes[2].bytes-sizes[0].bytes)/(1<<20), float64(sizes[3].bytes-sizes[0].bytes)/(1<<20),
		ms(cold[2].median-cold[0].median), ms(cold[3].median-cold[0].median), libs[1].name, libs[1].name, nc(false)/base[false], nc(false), base[false], nc(true)/base[true])
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
