package upload_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

const bucket = "tiles"

func gz(b []byte) []byte { return pmtilestest.Compress(b, pmtiles.CompressionGzip) }

type object struct {
	body                   []byte
	ctype, cenc, sha256hex string
}

// run uploads src to dst and returns the report; an error fails the test.
func run(t *testing.T, c *s3.Client, src string, dst upload.Destination, opts upload.Options) upload.Report {
	t.Helper()
	rep, err := upload.Run(context.Background(), c, src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func get(t *testing.T, c *s3.Client, key string) object {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return object{b, aws.ToString(out.ContentType), aws.ToString(out.ContentEncoding), out.Metadata[upload.MetaSHA256]}
}

func keys(t *testing.T, c *s3.Client) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	return ks
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestDirectory(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n tile")
	mvt := []byte("\x1a\x05water")
	files := map[string][]byte{
		"0/0/0.png":     png,
		"1/0/1.pbf":     gz(mvt), // gzip by its bytes
		"1/1/1.pbf":     mvt,     // not gzip, same extension
		"1/1/0.mvt":     mvt,
		"2/1/3.jpeg":    []byte("\xff\xd8\xff jpeg"),
		"2/3/3.webp":    []byte("RIFF webp"),
		"3/0/0.avif":    gz([]byte("avif gzipped by mistake")), // gzip magic wins over the extension
		"metadata.json": []byte(`{"format":"pbf"}`),
		"README.txt":    []byte("not a tile"),
		"1/0/.DS_Store": []byte("junk"),
		"x/0/0.png":     png,
		"0/0/0.mbtiles": []byte("a database is no tile"),
	}
	filetree.Write(t, dir, files)
	dst := upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "city"}
	rep := run(t, ep.Client, dir, dst, upload.Options{Concurrency: 3})
	if rep.Uploaded != 8 || rep.Failed != 0 || rep.Skips[upload.SkipNotTile] != 4 {
		t.Errorf("first run: got %+v, want 8 uploaded, 4 not tiles", rep)
	}
	for _, c := range []struct {
		rel, ctype, cenc string
	}{
		{"0/0/0.png", "image/png", ""},
		{"1/0/1.pbf", "application/vnd.mapbox-vector-tile", "gzip"},
		{"1/1/1.pbf", "application/vnd.mapbox-vector-tile", ""},
		{"1/1/0.mvt", "application/vnd.mapbox-vector-tile", ""},
		{"2/1/3.jpeg", "image/jpeg", ""},
		{"2/3/3.webp", "image/webp", ""},
		{"3/0/0.avif", "image/avif", "gzip"},
		{"metadata.json", "application/json", ""},
	} {
		t.Run(c.rel, func(t *testing.T) {
			o := get(t, ep.Client, "tiles/city/"+c.rel)
			if o.ctype != c.ctype || o.cenc != c.cenc {
				t.Errorf("got Content-Type %q, Content-Encoding %q, want %q, %q", o.ctype, o.cenc, c.ctype, c.cenc)
			}
			if !bytes.Equal(o.body, files[c.rel]) || o.sha256hex != sum(files[c.rel]) {
				t.Errorf("got body %q sha256 %s, want %q %s", o.body, o.sha256hex, files[c.rel], sum(files[c.rel]))
			}
		})
	}
	if got := len(keys(t, ep.Client)); got != 8 {
		t.Errorf("objects: got %d, want 8", got)
	}

	// A second run uploads nothing.
	rep = run(t, ep.Client, dir, dst, upload.Options{})
	if rep.Uploaded != 0 || rep.Skips[upload.SkipUnchanged] != 8 {
		t.Errorf("second run: got %+v, want 0 uploaded, 8 unchanged", rep)
	}

	// A changed file of the same size is uploaded again (the checksum, not
	// the size, tells); so is one whose object lost its headers.
	changed := []byte("\x89PNG\r\n\x1a\n TILE")
	filetree.Write(t, dir, map[string][]byte{"0/0/0.png": changed})
	s3localtest.Put(t, ep.Client, bucket, "tiles/city/2/3/3.webp", files["2/3/3.webp"], "application/octet-stream", "")
	rep = run(t, ep.Client, dir, dst, upload.Options{})
	if rep.Uploaded != 2 || rep.Skips[upload.SkipUnchanged] != 6 {
		t.Errorf("third run: got %+v, want 2 uploaded, 6 unchanged", rep)
	}
	if o := get(t, ep.Client, "tiles/city/0/0/0.png"); !bytes.Equal(o.body, changed) {
		t.Errorf("changed tile: got %q, want %q", o.body, changed)
	}
	if o := get(t, ep.Client, "tiles/city/2/3/3.webp"); o.ctype != "image/webp" {
		t.Errorf("re-uploaded webp: got Content-Type %q, want image/webp", o.ctype)
	}
}

// TestWholeFile: an archive or a database goes up whole, as NAME.pmtiles
// or NAME.mbtiles whether the destination names it with its extension or
// without, with its Content-Type and its bytes' SHA-256; a second run
// finds it unchanged and skips it.
func TestWholeFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, ctype string
		opts        upload.Options
		write       func(t *testing.T, path string) []byte
	}{
		{"sat.pmtiles", "application/vnd.pmtiles", upload.Options{PartSize: 5 << 20}, func(t *testing.T, path string) []byte {
			// One incompressible 6 MiB tile makes the archive a multipart
			// upload with 5 MiB parts, whose ETag is no MD5 of the bytes.
			big := make([]byte, 6<<20)
			rand.Read(big)
			archive := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("root"), {Z: 1, X: 1}: big}, pmtilestest.Options{Clustered: true})
			if err := os.WriteFile(path, archive, 0o644); err != nil {
				t.Fatal(err)
			}
			return archive
		}},
		{"roads.mbtiles", "application/vnd.sqlite3", upload.Options{}, func(t *testing.T, path string) []byte {
			return sqlitetest.Write(t, path, mbtilesSchema...)
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			ep := s3localtest.Start(t, bucket)
			path := filepath.Join(t.TempDir(), tc.file)
			want := tc.write(t, path)
			name := strings.TrimSuffix(tc.file, filepath.Ext(tc.file))
			for i, target := range []string{"s3://tiles/tiles/" + name, "s3://tiles/tiles/" + tc.file} {
				dst, err := upload.ParseDestination(target)
				if err != nil {
					t.Fatal(err)
				}
				rep := run(t, ep.Client, path, dst, tc.opts)
				if i == 0 && rep.Uploaded != 1 {
					t.Errorf("first run: got %+v, want 1 uploaded", rep)
				}
				if i == 1 && (rep.Uploaded != 0 || rep.Skips[upload.SkipUnchanged] != 1) {
					t.Errorf("second run: got %+v, want it skipped as unchanged", rep)
				}
			}
			o := get(t, ep.Client, "tiles/"+tc.file)
			if o.ctype != tc.ctype || o.cenc != "" || !bytes.Equal(o.body, want) || o.sha256hex != sum(want) {
				t.Errorf("got Content-Type %q, Content-Encoding %q, %d bytes, sha256 %s, want %s, none, %d bytes, %s",
					o.ctype, o.cenc, len(o.body), o.sha256hex, tc.ctype, len(want), sum(want))
			}
			if got := keys(t, ep.Client); len(got) != 1 {
				t.Errorf("objects: got %v, want only tiles/%s", got, tc.file)
			}
		})
	}
}

var mbtilesSchema = []string{
	`CREATE TABLE metadata (name text, value text)`,
	`INSERT INTO metadata VALUES ('format', 'png')`,
	`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
	`INSERT INTO tiles VALUES (0, 0, 0, X'89504e470d0a1a0a')`,
}

func TestBadSource(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	good := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("a"), {Z: 1}: []byte("bb"), {Z: 1, X: 1}: []byte("ccc")}, pmtilestest.Options{Clustered: true})
	leafy := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("a"), {Z: 1}: []byte("bb"), {Z: 1, X: 1}: []byte("ccc"), {Z: 1, Y: 1}: []byte("d")},
		pmtilestest.Options{Clustered: true, MaxRootBytes: 5, LeafEntries: 2})
	h, err := pmtiles.ParseHeader(leafy)
	if err != nil {
		t.Fatal(err)
	}
	// A leaf that points past the tile data, which only reading it shows.
	badLeaf := bytes.Clone(leafy)
	h.TileDataLength = 3
	copy(badLeaf, pmtilestest.EncodeHeader(h))
	random := make([]byte, 20000)
	mrand.NewChaCha8([32]byte{1}).Read(random)
	copy(random, "\x9c\x41\x07\x00\x00\x00\x00")
	filetree.Write(t, dir, map[string][]byte{
		"notes.txt":      []byte("x"),
		"fake.pmtiles":   []byte("<html>not an archive</html>" + strings.Repeat(" ", 200)),
		"short.pmtiles":  []byte("PMTiles"),
		"random.pmtiles": random,
		"cut.pmtiles":    good[:len(good)-2],
		"leaf.pmtiles":   badLeaf,
	})
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	filetree.Write(t, dir, map[string][]byte{"fake.mbtiles": []byte(strings.Repeat("not SQLite ", 100))})
	noTiles := filepath.Join(dir, "notiles.mbtiles")
	sqlitetest.Write(t, noTiles, mbtilesSchema[:2]...)
	whole := sqlitetest.Write(t, filepath.Join(dir, "whole.mbtiles"), mbtilesSchema...)
	truncated := filepath.Join(dir, "truncated.mbtiles")
	filetree.Write(t, dir, map[string][]byte{"truncated.mbtiles": whole[:len(whole)-512]})
	dst := upload.Destination{Bucket: bucket, Name: "x"}
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, c := range []struct{ name, path, want string }{
		{"missing", p("nope"), "upload: stat " + p("nope") + ": no such file or directory"},
		{"a file that is no archive", p("notes.txt"), "upload: " + p("notes.txt") + ": want a directory of z/x/y.ext tiles, a .pmtiles, a .mbtiles or a .tif file"},
		{"an archive that is not one", p("fake.pmtiles"), "upload: " + p("fake.pmtiles") + `: not a valid PMTiles v3 archive: pmtiles: header: bad magic "<html>n": pmtiles: invalid archive`},
		{"random bytes", p("random.pmtiles"), "upload: " + p("random.pmtiles") + `: not a valid PMTiles v3 archive: pmtiles: header: bad magic "\x9cA\a\x00\x00\x00\x00": pmtiles: invalid archive`},
		{"shorter than a header", p("short.pmtiles"), "upload: " + p("short.pmtiles") + ": not a valid PMTiles v3 archive: pmtiles: archive of 7 bytes is shorter than its header: pmtiles: invalid archive"},
		{"a truncated archive", p("cut.pmtiles"), "upload: " + p("cut.pmtiles") + fmt.Sprintf(": not a valid PMTiles v3 archive: pmtiles: header: tile data at %d+6 lies outside the archive (%d bytes): pmtiles: invalid archive", len(good)-6, len(good)-2)},
		{"a leaf past the tile data", p("leaf.pmtiles"), "upload: " + p("leaf.pmtiles") + ": not a valid PMTiles v3 archive: pmtiles: leaf directory at"},
		{"a directory without tiles", empty, "upload: " + empty + ": no z/x/y.ext tiles"},
		{"a database that is not one", p("fake.mbtiles"), "upload: " + p("fake.mbtiles") + ": not a valid MBTiles database: mbtiles:"},
		{"a database without tiles", noTiles, "upload: " + noTiles + ": not a valid MBTiles database: mbtiles:"},
		{"a truncated database", truncated, "upload: " + truncated + ": not a valid MBTiles database: mbtiles:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := upload.Run(context.Background(), ep.Client, c.path, dst, upload.Options{})
			if !errors.Is(err, upload.ErrSource) {
				t.Errorf("got %v, want %v", err, upload.ErrSource)
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Count(err.Error(), "upload:") != 1 {
				t.Errorf("got %v, want %s (one upload: prefix)", err, c.want)
			}
		})
	}
	if got := keys(t, ep.Client); len(got) != 0 {
		t.Errorf("objects after bad sources: got %v, want none", got)
	}
}

func TestParseDestination(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want upload.Destination
		ok   bool
	}{
		{"s3://b/NAME", upload.Destination{Bucket: "b", Name: "NAME"}, true},
		{"s3://b/tiles/osm", upload.Destination{Bucket: "b", Prefix: "tiles/", Name: "osm"}, true},
		{"s3://b/a/b/osm.pmtiles", upload.Destination{Bucket: "b", Prefix: "a/b/", Name: "osm"}, true},
		{"s3://b/a/osm.mbtiles", upload.Destination{Bucket: "b", Prefix: "a/", Name: "osm"}, true},
		{"s3://b/tiles/osm/", upload.Destination{Bucket: "b", Prefix: "tiles/", Name: "osm"}, true},
		{"s3://b", upload.Destination{}, false},
		{"s3://b/", upload.Destination{}, false},
		{"https://b/osm", upload.Destination{}, false},
		{"b/osm", upload.Destination{}, false},
		{"s3:///osm", upload.Destination{}, false},
		{"s3://b/a/../osm", upload.Destination{}, false},
		{"s3://b/osm?versionId=1", upload.Destination{}, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := upload.ParseDestination(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Errorf("got %+v, %v, want %+v (ok=%v)", got, err, c.want, c.ok)
			}
			if err != nil && !errors.Is(err, upload.ErrDestination) {
				t.Errorf("error %v is not ErrDestination", err)
			}
		})
	}
}

func TestProgressIsRateLimited(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	files := map[string][]byte{}
	for i := range 10 {
		files["4/1/"+string(rune('0'+i))+".png"] = []byte{byte(i)}
	}
	filetree.Write(t, dir, files)
	for _, c := range []struct {
		name  string
		step  time.Duration // the clock moves this much each time it is read
		lines int
	}{
		{"clock stands still: the final line only", 0, 1},
		{"clock moves past the interval each read: a line per file", 2 * time.Second, 11},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(0, 0))
			now := func() time.Time { clock.Advance(c.step); return clock.Now() }
			var out bytes.Buffer
			dst := upload.Destination{Bucket: bucket, Name: "p" + c.step.String()}
			rep, err := upload.Run(context.Background(), ep.Client, dir, dst, upload.Options{Progress: &out, Now: now, Concurrency: 2})
			if err != nil || rep.Uploaded != 10 {
				t.Fatalf("got %+v, %v", rep, err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != c.lines {
				t.Errorf("got %d lines, want %d:\n%s", len(lines), c.lines, out.String())
			}
			if want := "upload: done: 10/10 files, 10 uploaded (10 B), 0 skipped, 0 failed"; lines[len(lines)-1] != want {
				t.Errorf("last line: got %q, want %q", lines[len(lines)-1], want)
			}
		})
	}
}

func TestFailuresAreReported(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"0/0/0.png": []byte("a"), "1/0/0.png": []byte("b")})
	ep.Faults().Add(s3local.Fault{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/1/0/0.png")
		},
		Status: http.StatusForbidden,
	})
	rep, err := upload.Run(context.Background(), ep.Client, dir, upload.Destination{Bucket: bucket, Name: "f"}, upload.Options{})
	if err == nil || !strings.Contains(err.Error(), "1/0/0.png") {
		t.Errorf("got error %v, want one naming 1/0/0.png", err)
	}
	if rep.Uploaded != 1 || rep.Failed != 1 || len(rep.Failures) != 1 {
		t.Errorf("got %+v, want 1 uploaded, 1 failed", rep)
	}
	if _, err := upload.Run(context.Background(), ep.Client, dir, upload.Destination{Bucket: "no-such-bucket", Name: "f"}, upload.Options{}); err == nil {
		t.Errorf("missing bucket: got no error")
	}
}

// TestDirectoryStyle: a style uploads with its tiles, sprites and glyph
// ranges, each with its content type; other files beside them do not.
func TestDirectoryStyle(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n sprite")
	glyph := []byte("\x0a\x09\x0a\x01A\x12\x050-255") // a stack "A", range "0-255"
	files := map[string][]byte{
		"0/0/0.pbf":                 []byte("\x1a\x05water"),
		"style.json":                []byte(`{"version":8,"sources":{},"layers":[]}`),
		"sprite.json":               []byte(`{}`),
		"sprite.png":                png,
		"sprite@2x.json":            []byte(`{}`),
		"sprite@2x.png":             png,
		"sprites/maki.json":         []byte(`{}`),
		"sprites/maki@2x.png":       png,
		"fonts/Noto Sans/0-255.pbf": glyph,
		"glyphs/A/256-511.pbf":      glyph,
		"fonts/Noto Sans/1-256.pbf": glyph,        // not a range
		"fonts/A/0-255.txt":         glyph,        // not a pbf
		"sprite.svg":                png,          // not a sprite format
		"mysprite.png":              png,          // not named sprite
		"sprites/a/b.png":           png,          // too deep
		"package.json":              []byte(`{}`), // not a style file
	}
	filetree.Write(t, dir, files)
	dst := upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "osm"}
	rep := run(t, ep.Client, dir, dst, upload.Options{Concurrency: 2})
	if rep.Uploaded != 10 || rep.Failed != 0 || rep.Skips[upload.SkipNotTile] != 6 {
		t.Errorf("got %+v, want 10 uploaded, 6 not tiles", rep)
	}
	for _, c := range []struct{ rel, ctype string }{
		{"0/0/0.pbf", "application/vnd.mapbox-vector-tile"},
		{"style.json", "application/json"},
		{"sprite.json", "application/json"},
		{"sprite.png", "image/png"},
		{"sprite@2x.json", "application/json"},
		{"sprite@2x.png", "image/png"},
		{"sprites/maki.json", "application/json"},
		{"sprites/maki@2x.png", "image/png"},
		{"fonts/Noto Sans/0-255.pbf", "application/x-protobuf"},
		{"glyphs/A/256-511.pbf", "application/x-protobuf"},
	} {
		t.Run(c.rel, func(t *testing.T) {
			o := get(t, ep.Client, "tiles/osm/"+c.rel)
			if o.ctype != c.ctype || !bytes.Equal(o.body, files[c.rel]) {
				t.Errorf("got %q, %q, want %q, %q", o.ctype, o.body, c.ctype, files[c.rel])
			}
		})
	}
}

// TestDirectoryFonts: a directory of fonts alone uploads as the tileset
// "fonts", the fonts every style may share.
func TestDirectoryFonts(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"Noto Sans Regular/0-255.pbf": []byte("\x0a\x00")})
	rep := run(t, ep.Client, dir, upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "fonts"}, upload.Options{})
	if rep.Uploaded != 1 {
		t.Errorf("got %+v, want 1 uploaded", rep)
	}
	if o := get(t, ep.Client, "tiles/fonts/Noto Sans Regular/0-255.pbf"); o.ctype != "application/x-protobuf" {
		t.Errorf("got %q, want %q", o.ctype, "application/x-protobuf")
	}
}

// TestGzipVectorTiles: with GzipVectorTiles, an uncompressed vector tile is
// stored gzip-compressed (CloudFront does not compress the vector-tile
// type), one already compressed and other types are stored as they are, a
// glyph range is left alone, and a second run finds nothing to upload.
func TestGzipVectorTiles(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	mvt := bytes.Repeat([]byte("\x1a\x05water"), 100)
	png := []byte("\x89PNG\r\n\x1a\n tile")
	filetree.Write(t, dir, map[string][]byte{
		"1/1/1.pbf":                 mvt,
		"1/1/0.mvt":                 mvt,
		"1/0/1.pbf":                 gz(mvt),
		"0/0/0.png":                 png,
		"fonts/Noto Sans/0-255.pbf": []byte("\x0a\x02glyphs"),
	})
	dst := upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "vec"}
	opts := upload.Options{GzipVectorTiles: true}
	rep := run(t, ep.Client, dir, dst, opts)
	if rep.Uploaded != 5 {
		t.Fatalf("first run: got %+v, want 5 uploaded", rep)
	}
	for _, c := range []struct {
		rel, cenc string
		want      []byte // the bytes after decoding
	}{
		{"1/1/1.pbf", "gzip", mvt},
		{"1/1/0.mvt", "gzip", mvt},
		{"1/0/1.pbf", "gzip", mvt},
		{"0/0/0.png", "", png},
		{"fonts/Noto Sans/0-255.pbf", "", []byte("\x0a\x02glyphs")},
	} {
		o := get(t, ep.Client, "tiles/vec/"+c.rel)
		if o.cenc != c.cenc {
			t.Errorf("%s: Content-Encoding %q, want %q", c.rel, o.cenc, c.cenc)
		}
		got := o.body
		if o.cenc == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(o.body))
			if err != nil {
				t.Fatalf("%s: %v", c.rel, err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", c.rel, err)
			}
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: decoded %q, want %q", c.rel, got, c.want)
		}
		if c.rel == "1/1/1.pbf" && len(o.body) >= len(mvt) {
			t.Errorf("%s: stored %d bytes, want fewer than the %d uncompressed", c.rel, len(o.body), len(mvt))
		}
	}
	rep = run(t, ep.Client, dir, dst, opts)
	if rep.Uploaded != 0 || rep.Skipped != 5 {
		t.Errorf("second run: got %+v, want 0 uploaded, 5 skipped as unchanged", rep)
	}
}

// TestNoFinalProgress: a caller that prints its own summary gets the
// progress lines without the last one.
func TestNoFinalProgress(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"4/1/0.png": {0}, "4/1/1.png": {1}})
	clock := fakeclock.New(time.Unix(0, 0))
	now := func() time.Time { clock.Advance(2 * time.Second); return clock.Now() }
	var out bytes.Buffer
	rep, err := upload.Run(context.Background(), ep.Client, dir, upload.Destination{Bucket: bucket, Name: "nf"}, upload.Options{Progress: &out, Now: now, Concurrency: 1, NoFinalProgress: true})
	if err != nil || rep.Uploaded != 2 {
		t.Fatalf("got %+v, %v", rep, err)
	}
	if got := out.String(); strings.Count(got, "upload: progress: ") != 2 || strings.Contains(got, "upload: done") {
		t.Errorf("got %q, want two progress lines and no final one", got)
	}
}
