package disk_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

func open(t *testing.T, dir string, maxBytes int64) *disk.Store {
	t.Helper()
	s, err := disk.Open(disk.Config{Dir: dir, MaxBytes: maxBytes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func mk(body string, etag string) *tile.Tile {
	return &tile.Tile{Body: []byte(body), ContentType: "image/png", ETag: etag, LastModified: t0, StoredAt: t0.Add(time.Hour)}
}

func put(t *testing.T, s *disk.Store, key string, tl *tile.Tile) {
	t.Helper()
	if err := s.Put(key, tl); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// files lists the regular files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func tileFiles(t *testing.T, dir string) []string {
	var out []string
	for _, f := range files(t, dir) {
		if strings.HasSuffix(f, ".tile") {
			out = append(out, f)
		}
	}
	return out
}

func sameTile(t *testing.T, got, want *tile.Tile) {
	t.Helper()
	if !bytes.Equal(got.Body, want.Body) || got.ContentType != want.ContentType || got.ContentEncoding != want.ContentEncoding ||
		got.ETag != want.ETag || !got.LastModified.Equal(want.LastModified) || !got.StoredAt.Equal(want.StoredAt) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestPutGet(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<20)
	tests := []struct {
		key string
		t   *tile.Tile
	}{
		{"osm/1/0/0.png", mk("png", `"e1"`)},
		{"osm/1/0/1.mvt", &tile.Tile{Body: []byte("\x1f\x8bgz"), ContentType: "application/vnd.mapbox-vector-tile", ContentEncoding: "gzip", ETag: `"abc-3"`, LastModified: t0}},
		{"empty/0/0/0.png", &tile.Tile{Body: nil, ContentType: "image/png", StoredAt: t0}},
		{"weird/ünïcode key %20+ & ?/x.png", mk("w", `"w"`)},
		{"dot/.hidden/..x", mk("d", `"d"`)},
		{strings.Repeat("k", 255) + "/" + strings.Repeat("l", 255) + "/" + strings.Repeat("m", 255), mk("long", `"l"`)},
	}
	for _, tt := range tests {
		put(t, s, tt.key, tt.t)
	}
	for _, tt := range tests {
		got, ok := s.Get(tt.key)
		if !ok {
			t.Errorf("Get(%q): miss", tt.key)
			continue
		}
		want := *tt.t
		if want.Body == nil {
			want.Body = []byte{}
		}
		if want.StoredAt.IsZero() {
			// Put stamps it from the clock; just check it is set.
			want.StoredAt = got.StoredAt
			if got.StoredAt.IsZero() {
				t.Errorf("Get(%q): StoredAt not stamped", tt.key)
			}
		}
		sameTile(t, got, &want)
		if it, ok := s.Stat(tt.key); !ok || it.Size != int64(len(tt.t.Body)) || it.ETag != tt.t.ETag {
			t.Errorf("Stat(%q): got %+v %v", tt.key, it, ok)
		}
	}
	if _, ok := s.Get("osm/9/9/9.png"); ok {
		t.Error("Get of an absent key: hit")
	}
	if err := s.Put("../escape", mk("x", "")); !errors.Is(err, tile.ErrBadKey) {
		t.Errorf("Put of a bad key: got %v, want tile.ErrBadKey", err)
	}
	st := s.Stats()
	if st.Hits != uint64(len(tests)) || st.Misses != 1 || st.Writes != uint64(len(tests)) || st.Entries != int64(len(tests)) {
		t.Errorf("stats: %+v", st)
	}
	// File names are hashes, never the keys.
	for _, f := range files(t, s.Dir()) {
		if !regexpTileFile(f) {
			t.Errorf("unexpected file %q", f)
		}
	}
}

func regexpTileFile(rel string) bool {
	dir, file := filepath.Split(rel)
	return len(dir) == 3 && strings.HasSuffix(file, ".tile") && len(file) == 32+5 && strings.HasPrefix(file, dir[:2])
}

func TestPutReplaces(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<20)
	put(t, s, "a/1", mk("first version", `"1"`))
	put(t, s, "a/1", mk("2nd", `"2"`))
	got, ok := s.Get("a/1")
	if !ok || string(got.Body) != "2nd" || got.ETag != `"2"` {
		t.Fatalf("got %v %v, want the second version", got, ok)
	}
	if s.Len() != 1 || len(tileFiles(t, s.Dir())) != 1 {
		t.Errorf("Len %d, files %v, want 1 of each", s.Len(), tileFiles(t, s.Dir()))
	}
	fi, _ := os.Stat(filepath.Join(s.Dir(), disk.FileName("a/1")))
	if want := blocks(s, fi.Size()); s.Bytes() != want {
		t.Errorf("Bytes %d, want the file's %d bytes in blocks, %d", s.Bytes(), fi.Size(), want)
	}
}

// blocks is what a file of size bytes is charged in s.
func blocks(s *disk.Store, size int64) int64 {
	b := s.Stats().BlockSize
	return (size + b - 1) / b * b
}

func TestTornAndCorruptFilesAreNeverServed(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("tile bytes ", 100)
	tests := []struct {
		name   string
		damage func(path string) error
	}{
		{"truncated body", func(p string) error { return truncateBy(p, 10) }},
		{"truncated to header", func(p string) error { return os.Truncate(p, disk.HeaderLen) }},
		{"empty", func(p string) error { return os.Truncate(p, 0) }},
		{"extended", func(p string) error { return appendBytes(p, []byte("junk")) }},
		{"flipped body byte", func(p string) error { return flip(p, -5) }},
		{"flipped metadata byte", func(p string) error { return flip(p, disk.HeaderLen+3) }},
		{"flipped length", func(p string) error { return flip(p, 12) }},
		{"flipped magic", func(p string) error { return flip(p, 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, t.TempDir(), 1<<20)
			put(t, s, "osm/1/2/3.png", mk(body, `"x"`))
			put(t, s, "osm/1/2/4.png", mk(body, `"y"`))
			path := filepath.Join(s.Dir(), disk.FileName("osm/1/2/3.png"))
			if err := tt.damage(path); err != nil {
				t.Fatal(err)
			}
			if got, ok := s.Get("osm/1/2/3.png"); ok {
				t.Fatalf("served a damaged file: %d bytes", len(got.Body))
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("damaged file still there: %v", err)
			}
			if _, ok := s.Stat("osm/1/2/3.png"); ok {
				t.Error("damaged file still indexed")
			}
			if st := s.Stats(); st.Corrupt != 1 || st.Entries != 1 {
				t.Errorf("stats: %+v, want 1 corrupt, 1 entry", st)
			}
			if _, ok := s.Get("osm/1/2/4.png"); !ok {
				t.Error("the undamaged neighbour is gone")
			}
		})
	}
}

// TestLongMetadataIsVerified: metadata longer than the first read of a file
// (a key of hundreds of bytes) is read whole and checked: a damaged byte
// past that first read is never served, and the file is read back whole
// after a restart.
func TestLongMetadataIsVerified(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("k", 200) + "/" + strings.Repeat("l", 200) + "/0.png"
	for _, damage := range []bool{false, true} {
		dir := t.TempDir()
		s := open(t, dir, 1<<20)
		put(t, s, key, mk("long", `"l"`))
		if damage {
			if err := flip(filepath.Join(dir, disk.FileName(key)), disk.HeaderLen+300); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Get(key); ok {
				t.Fatal("served a file whose metadata was damaged past the first read")
			}
			if st := s.Stats(); st.Corrupt != 1 {
				t.Errorf("stats: %+v, want 1 corrupt", st)
			}
			continue
		}
		got, ok := open(t, dir, 1<<20).Get(key)
		if !ok {
			t.Fatal("long metadata: miss after a restart")
		}
		sameTile(t, got, mk("long", `"l"`))
	}
}

func truncateBy(path string, n int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, fi.Size()-n)
}

func appendBytes(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(b)
	return err
}

// flip inverts one byte; a negative offset counts from the end.
func flip(path string, off int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0xff
	return os.WriteFile(path, b, 0o600)
}

func TestOpenRebuildsIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	want := map[string]disk.Item{}
	for i := range 40 {
		key := fmt.Sprintf("osm/%d/%d.png", i%5, i)
		body := strings.Repeat("b", i*7)
		etag := fmt.Sprintf(`"%x-%d"`, i*977, i%3)
		put(t, s, key, mk(body, etag))
		want[key] = disk.Item{Key: key, Size: int64(len(body)), ETag: etag}
	}
	s.Delete("osm/0/0.png")
	delete(want, "osm/0/0.png")

	r := open(t, dir, 1<<20)
	if r.Len() != len(want) || r.Bytes() != s.Bytes() {
		t.Fatalf("rebuilt %d entries, %d bytes, want %d, %d", r.Len(), r.Bytes(), len(want), s.Bytes())
	}
	var keys []string
	r.Scan("", 0, func(it disk.Item) bool {
		keys = append(keys, it.Key)
		if it != want[it.Key] {
			t.Errorf("rebuilt %+v, want %+v", it, want[it.Key])
		}
		return true
	})
	if !slices.IsSorted(keys) || len(keys) != len(want) {
		t.Errorf("scan after rebuild: %d keys, sorted %v", len(keys), slices.IsSorted(keys))
	}
	got, ok := r.Get("osm/3/8.png")
	if !ok {
		t.Fatal("rebuilt store misses a tile")
	}
	sameTile(t, got, mk(strings.Repeat("b", 56), want["osm/3/8.png"].ETag))
}

func TestOpenCleansUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	put(t, s, "good/1", mk("good", `"g"`))
	put(t, s, "torn/1", mk(strings.Repeat("t", 100), `"t"`))
	put(t, s, "badheader/1", mk("bad", `"b"`))
	put(t, s, "moved/1", mk("moved", `"m"`))
	sub := filepath.Dir(filepath.Join(dir, disk.FileName("good/1")))

	must(t, truncateBy(filepath.Join(dir, disk.FileName("torn/1")), 1))
	must(t, flip(filepath.Join(dir, disk.FileName("badheader/1")), disk.HeaderLen+1))
	// A file whose name is not its key's (copied by hand, or a hash collision).
	other := filepath.Join(dir, disk.FileName("elsewhere/1"))
	must(t, os.MkdirAll(filepath.Dir(other), 0o700))
	must(t, os.Rename(filepath.Join(dir, disk.FileName("moved/1")), other))
	// Leftovers of a crash mid-write, in a fan-out directory and at the top.
	must(t, os.WriteFile(filepath.Join(sub, ".tmp-123456"), []byte("half a fi"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, ".tmp-999"), nil, 0o600))
	// Garbage with a tile file's name; and a file that is not ours at all.
	garbage := filepath.Join(dir, "ff", strings.Repeat("f", 32)+".tile")
	must(t, os.MkdirAll(filepath.Dir(garbage), 0o700))
	must(t, os.WriteFile(garbage, []byte("not a tile"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "README"), []byte("keep me"), 0o600))

	r := open(t, dir, 1<<20)
	if r.Len() != 1 {
		t.Errorf("rebuilt %d entries, want 1", r.Len())
	}
	if _, ok := r.Get("good/1"); !ok {
		t.Error("the good file was lost")
	}
	if st := r.Stats(); st.Corrupt != 4 {
		t.Errorf("corrupt: got %d, want 4 (torn, bad header, misnamed, garbage)", st.Corrupt)
	}
	got := files(t, dir)
	want := []string{disk.FileName("good/1"), "README"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("files after Open: got %v, want %v", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenEvictsToMaxBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	for i := range 20 {
		put(t, s, fmt.Sprintf("k/%02d", i), &tile.Tile{Body: bytes.Repeat([]byte("x"), 1000), StoredAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	per := s.Bytes() / 20
	r := open(t, dir, 5*per)
	if r.Bytes() > 5*per || r.Len() != 5 {
		t.Fatalf("after Open: %d entries, %d bytes, want 5 within %d", r.Len(), r.Bytes(), 5*per)
	}
	if n := len(tileFiles(t, dir)); n != 5 {
		t.Errorf("%d files on disk, want 5", n)
	}
	// The oldest (by StoredAt) went first.
	var keys []string
	r.Scan("", 0, func(it disk.Item) bool { keys = append(keys, it.Key); return true })
	if want := []string{"k/15", "k/16", "k/17", "k/18", "k/19"}; !slices.Equal(keys, want) {
		t.Errorf("kept %v, want %v", keys, want)
	}
	if st := r.Stats(); st.Evictions != 15 {
		t.Errorf("evictions: got %d, want 15", st.Evictions)
	}
}

func TestPutEvictsWithSIEVE(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := bytes.Repeat([]byte("x"), 1000)
	size := open(t, t.TempDir(), 1<<20).Charge("k/a", &tile.Tile{Body: body, StoredAt: t0})
	s := open(t, dir, 4*size)
	for _, k := range []string{"k/a", "k/b", "k/c", "k/d"} {
		put(t, s, k, &tile.Tile{Body: body, StoredAt: t0})
	}
	if s.Bytes() != 4*size {
		t.Fatalf("Bytes %d, want %d", s.Bytes(), 4*size)
	}
	if _, ok := s.Get("k/a"); !ok { // visited: SIEVE spares it once
		t.Fatal("miss")
	}
	put(t, s, "k/e", &tile.Tile{Body: body, StoredAt: t0})
	if _, ok := s.Stat("k/a"); !ok {
		t.Error("SIEVE evicted the visited oldest entry")
	}
	if _, ok := s.Stat("k/b"); ok {
		t.Error("k/b (oldest unvisited) survived")
	}
	if _, err := os.Stat(filepath.Join(dir, disk.FileName("k/b"))); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the evicted file is still on disk")
	}
	put(t, s, "k/f", &tile.Tile{Body: body, StoredAt: t0})
	if _, ok := s.Stat("k/c"); ok {
		t.Error("k/c survived the second eviction")
	}
	if s.Bytes() > s.MaxBytes() || s.Len() != 4 || s.Stats().Evictions != 2 {
		t.Errorf("after evictions: %+v", s.Stats())
	}

	if err := s.Put("k/huge", &tile.Tile{Body: make([]byte, 5*size)}); !errors.Is(err, disk.ErrTooLarge) {
		t.Errorf("tile over the bound: got %v, want ErrTooLarge", err)
	}
	if s.Len() != 4 {
		t.Error("a refused tile evicted others")
	}
}

func TestWriteFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	put(t, s, "a/1", mk("old", `"old"`))
	// A disk that others have filled: the first bytes go, then ENOSPC, even
	// after the store evicted all it had.
	attempts := 0
	disk.SetWriteHook(s, func(f *os.File, p []byte) (int, error) {
		attempts++
		n, _ := f.Write(p[:len(p)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	})
	err := s.Put("a/1", mk("new", `"new"`))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	err = s.Put("a/2", mk("new", `"new"`))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	for _, f := range files(t, dir) {
		if strings.Contains(f, ".tmp-") {
			t.Errorf("temp file left behind: %s", f)
		}
	}
	// Making room may have evicted the old version; it is never damaged.
	if got, ok := s.Get("a/1"); ok && string(got.Body) != "old" {
		t.Errorf("the old version was damaged: %q", got.Body)
	}
	if attempts != 4 {
		t.Errorf("%d write attempts for 2 Puts, want 4 (one retry each)", attempts)
	}
	if st := s.Stats(); st.WriteErrors != 2 || st.NoSpace != 2 {
		t.Errorf("stats: %+v, want 2 write errors, 2 ENOSPC", st)
	}
	disk.SetWriteHook(s, (*os.File).Write)
	put(t, s, "a/2", mk("new", `"new"`))
}

func TestDirUnderRegularFile(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "file")
	must(t, os.WriteFile(file, nil, 0o600))
	if _, err := disk.Open(disk.Config{Dir: filepath.Join(file, "cache")}, nil); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Open under a file: got %v, want ENOTDIR", err)
	}

	// A store whose directory is replaced by a file after Open: every write
	// fails with ENOTDIR, cleanly.
	dir := filepath.Join(base, "cache")
	s := open(t, dir, 1<<20)
	must(t, os.RemoveAll(dir))
	must(t, os.WriteFile(dir, nil, 0o600))
	if err := s.Put("a/1", mk("x", "")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Put: got %v, want ENOTDIR", err)
	}
	if s.Len() != 0 || s.Stats().WriteErrors != 1 {
		t.Errorf("stats: %+v", s.Stats())
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<20)
	put(t, s, "a/1", mk("x", ""))
	if !s.Delete("a/1") || s.Delete("a/1") {
		t.Error("Delete: want true then false")
	}
	if _, ok := s.Get("a/1"); ok || s.Len() != 0 || s.Bytes() != 0 || len(files(t, s.Dir())) != 0 {
		t.Errorf("after Delete: len %d bytes %d files %v", s.Len(), s.Bytes(), files(t, s.Dir()))
	}
}

func TestDeletePrefix(t *testing.T) {
	t.Parallel()
	keys := []string{"osm/1/0/0.png", "osm/1/1/0.png", "osm/12/3/4.png", "osm/2/0/0.png", "osm2/1/0/0.png", "sat/1/0/0.jpg"}
	tests := []struct {
		prefix string
		gone   []string
	}{
		{"osm/", []string{"osm/1/0/0.png", "osm/1/1/0.png", "osm/12/3/4.png", "osm/2/0/0.png"}},
		{"osm/1", []string{"osm/1/0/0.png", "osm/1/1/0.png", "osm/12/3/4.png"}},
		{"osm/1/", []string{"osm/1/0/0.png", "osm/1/1/0.png"}},
		{"osm", []string{"osm/1/0/0.png", "osm/1/1/0.png", "osm/12/3/4.png", "osm/2/0/0.png", "osm2/1/0/0.png"}},
		{"osm/12/3/4.png", []string{"osm/12/3/4.png"}},
		{"none/", nil},
		{"", keys},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.prefix), func(t *testing.T) {
			t.Parallel()
			s := open(t, t.TempDir(), 1<<20)
			var wantBytes int64
			for i, k := range keys {
				tl := mk(strings.Repeat("z", i+1), `"e"`)
				put(t, s, k, tl)
				if slices.Contains(tt.gone, k) {
					wantBytes += s.Charge(k, tl)
				}
			}
			n, b, err := s.DeletePrefix(tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tt.gone) || b != wantBytes {
				t.Errorf("DeletePrefix: got %d, %d, want %d, %d", n, b, len(tt.gone), wantBytes)
			}
			for _, k := range keys {
				_, indexed := s.Stat(k)
				_, err := os.Stat(filepath.Join(s.Dir(), disk.FileName(k)))
				onDisk := err == nil
				if want := !slices.Contains(tt.gone, k); indexed != want || onDisk != want {
					t.Errorf("%s: indexed %v, on disk %v, want %v", k, indexed, onDisk, want)
				}
			}
			if s.Len() != len(keys)-len(tt.gone) || len(tileFiles(t, s.Dir())) != s.Len() {
				t.Errorf("Len %d, files %d", s.Len(), len(tileFiles(t, s.Dir())))
			}
		})
	}
}

func TestPurgeWinsOverPutInFlight(t *testing.T) {
	t.Parallel()
	for _, purge := range []string{"delete", "prefix"} {
		t.Run(purge, func(t *testing.T) {
			t.Parallel()
			s := open(t, t.TempDir(), 1<<20)
			writing, release := holdFirstWrite(s)
			done := make(chan error)
			go func() { done <- s.Put("osm/1/0/0.png", mk("stale", `"old"`)) }()
			<-writing
			if purge == "delete" {
				s.Delete("osm/1/0/0.png")
			} else {
				s.DeletePrefix("osm/")
			}
			close(release)
			if err := <-done; !errors.Is(err, disk.ErrPurged) {
				t.Fatalf("Put overtaken by a purge: got %v, want ErrPurged", err)
			}
			if _, ok := s.Get("osm/1/0/0.png"); ok || len(files(t, s.Dir())) != 0 {
				t.Errorf("purged tile came back: files %v", files(t, s.Dir()))
			}
		})
	}
}

// TestPutSinceMark: a PutSince is committed only if no removal ran since
// its mark, whether the removal ran before the write began or while it
// wrote; a mark taken after the removal writes.
func TestPutSinceMark(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		removal func(s *disk.Store)
		want    error
	}{
		{"no removal", func(*disk.Store) {}, nil},
		{"delete of another key", func(s *disk.Store) { s.Delete("other/1/0/0.png") }, disk.ErrPurged},
		{"prefix", func(s *disk.Store) { s.DeletePrefix("osm/") }, disk.ErrPurged},
		{"detach", func(s *disk.Store) { s.Detach("").Unlink() }, disk.ErrPurged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, t.TempDir(), 1<<20)
			m := s.Mark()
			tt.removal(s)
			err := s.PutSince(m, "osm/1/0/0.png", mk("body", `"v1"`))
			if !errors.Is(err, tt.want) {
				t.Fatalf("PutSince: got %v, want %v", err, tt.want)
			}
			_, indexed := s.Stat("osm/1/0/0.png")
			if want := tt.want == nil; indexed != want || len(files(t, s.Dir())) != s.Len() {
				t.Errorf("indexed: got %v, want %v (files %v)", indexed, want, files(t, s.Dir()))
			}
			if err := s.PutSince(s.Mark(), "osm/1/0/0.png", mk("body", `"v2"`)); err != nil {
				t.Errorf("PutSince with a fresh mark: got %v, want nil", err)
			}
		})
	}
}

// TestRemovalDoesNotWaitForDirSync: with Fsync on, a Delete, DeletePrefix
// or Detach does not wait for another Put's directory sync (a purge above
// the store would block its readers meanwhile).
func TestRemovalDoesNotWaitForDirSync(t *testing.T) {
	t.Parallel()
	removals := []struct {
		name string
		fn   func(s *disk.Store)
	}{
		{"delete", func(s *disk.Store) { s.Delete("b/1/0/0.png") }},
		{"prefix", func(s *disk.Store) { s.DeletePrefix("b/") }},
		{"detach", func(s *disk.Store) { s.Detach("b/").Unlink() }},
	}
	for _, r := range removals {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s, err := disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, Fsync: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put("b/1/0/0.png", mk("b", `"b"`)); err != nil {
				t.Fatal(err)
			}
			syncing, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			disk.SetSyncDirHook(s, func(string) { once.Do(func() { close(syncing); <-release }) })
			put := make(chan error)
			go func() { put <- s.Put("a/1/0/0.png", mk("a", `"a"`)) }()
			<-syncing
			removed := make(chan struct{})
			go func() { r.fn(s); close(removed) }()
			select {
			case <-removed:
			case <-time.After(10 * time.Second):
				close(release)
				t.Fatal("the removal waited for another Put's directory sync")
			}
			close(release)
			if err := <-put; err != nil {
				t.Fatalf("Put: got %v, want nil", err)
			}
			if _, ok := s.Stat("b/1/0/0.png"); ok {
				t.Error("removed key still indexed")
			}
		})
	}
}

func TestScan(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 64<<20)
	var want []string
	for i := range 700 {
		k := fmt.Sprintf("z/%04d", i)
		want = append(want, k)
		put(t, s, k, mk("s", fmt.Sprintf(`"%d"`, i)))
	}
	put(t, s, "y/1", mk("s", ""))

	// Writers elsewhere run during the scan; it still yields z/ in order.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s.Put(fmt.Sprintf("y/%d", i%50), mk("w", ""))
			s.DeletePrefix("y/4")
		}
	}()
	var got []string
	s.Scan("z/", 0, func(it disk.Item) bool { got = append(got, it.Key); return true })
	close(stop)
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Fatalf("scan: got %d keys, want %d in order", len(got), len(want))
	}

	got = got[:0]
	s.Scan("z/", 300, func(it disk.Item) bool { got = append(got, it.Key); return true })
	if !slices.Equal(got, want[:300]) {
		t.Errorf("limit 300: got %d keys", len(got))
	}
	got = got[:0]
	s.Scan("z/", 0, func(it disk.Item) bool { got = append(got, it.Key); return len(got) < 10 })
	if len(got) != 10 {
		t.Errorf("stop after 10: got %d", len(got))
	}
	n := 0
	s.Scan("x/", 0, func(disk.Item) bool { n++; return true })
	if n != 0 {
		t.Errorf("empty prefix scan yielded %d", n)
	}
}

// TestConcurrentAgainstDisk hammers the store from several goroutines and
// then checks that the index and the directory agree and the bound held.
func TestConcurrentAgainstDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 40<<10)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 400 {
				key := fmt.Sprintf("p%d/%d", r.IntN(4), r.IntN(60))
				switch op := r.IntN(10); {
				case op < 5:
					if got, ok := s.Get(key); ok && got.ETag != `"`+key+`"` {
						t.Errorf("Get(%q) returned %q", key, got.ETag)
					}
				case op < 8:
					s.Put(key, mk(strings.Repeat("v", r.IntN(2000)), `"`+key+`"`))
				case op < 9:
					s.Delete(key)
				default:
					s.DeletePrefix(key[:2])
				}
			}
		}()
	}
	wg.Wait()
	if s.Bytes() > s.MaxBytes() {
		t.Errorf("Bytes %d over the bound %d", s.Bytes(), s.MaxBytes())
	}
	var sum int64
	onDisk := tileFiles(t, dir)
	for _, f := range onDisk {
		fi, err := os.Stat(filepath.Join(dir, f))
		must(t, err)
		sum += blocks(s, fi.Size())
	}
	if len(onDisk) != s.Len() || sum != s.Bytes() {
		t.Errorf("disk holds %d files, %d bytes; index %d entries, %d bytes", len(onDisk), sum, s.Len(), s.Bytes())
	}
	for _, f := range files(t, dir) {
		if strings.Contains(f, ".tmp-") {
			t.Errorf("temp file left: %s", f)
		}
	}
	// Everything indexed is readable, and a reopen agrees.
	s.Scan("", 0, func(it disk.Item) bool {
		if _, ok := s.Get(it.Key); !ok {
			t.Errorf("indexed %q unreadable", it.Key)
		}
		return true
	})
	if r := open(t, dir, 40<<10); r.Len() != s.Len() || r.Bytes() != s.Bytes() {
		t.Errorf("reopen: %d/%d, want %d/%d", r.Len(), r.Bytes(), s.Len(), s.Bytes())
	}
}

// TestAgainstModel checks a sequence of random operations against a map
// (the bound is large enough that nothing is evicted).
func TestAgainstModel(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 64<<20)
	model := map[string]string{}
	r := rand.New(rand.NewPCG(7, 7))
	prefixes := []string{"", "a", "a/", "a/1", "b/", "b/2/"}
	for range 2000 {
		key := fmt.Sprintf("%c/%d/%d", 'a'+r.IntN(3), r.IntN(4), r.IntN(4))
		switch r.IntN(4) {
		case 0:
			v := fmt.Sprint(r.Int())
			put(t, s, key, mk(v, v))
			model[key] = v
		case 1:
			got, ok := s.Get(key)
			want, wok := model[key]
			if ok != wok || (ok && string(got.Body) != want) {
				t.Fatalf("Get(%q): got %v %v, want %q %v", key, got, ok, want, wok)
			}
		case 2:
			_, wok := model[key]
			if s.Delete(key) != wok {
				t.Fatalf("Delete(%q) disagrees", key)
			}
			delete(model, key)
		case 3:
			p := prefixes[r.IntN(len(prefixes))]
			n, _, _ := s.DeletePrefix(p)
			want := 0
			for k := range model {
				if strings.HasPrefix(k, p) {
					delete(model, k)
					want++
				}
			}
			if n != want {
				t.Fatalf("DeletePrefix(%q): %d, want %d", p, n, want)
			}
		}
		if s.Len() != len(model) {
			t.Fatalf("Len %d, model %d", s.Len(), len(model))
		}
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	if err := (disk.Config{MaxBytes: -1, Dir: "a\x00b"}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "negative") || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("Validate: got %v, want both problems", err)
	}
	if _, err := disk.Open(disk.Config{MaxBytes: -1}, nil); err == nil {
		t.Error("Open with a bad config: got nil")
	}
	s, err := disk.Open(disk.Config{Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.MaxBytes(); m <= 0 || m > disk.MaxDefaultBytes {
		t.Errorf("default MaxBytes %d, want (0, 10 GiB]", m)
	}
}

func TestFsync(t *testing.T) {
	t.Parallel()
	s, err := disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, Fsync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a/1", mk("synced", `"s"`))
	if got, ok := s.Get("a/1"); !ok || string(got.Body) != "synced" {
		t.Fatalf("got %v %v", got, ok)
	}
}

// holdFirstWrite holds s's first file write until release is closed;
// writing is closed once that write has begun.
func holdFirstWrite(s *disk.Store) (writing, release chan struct{}) {
	writing, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	disk.SetWriteHook(s, func(f *os.File, p []byte) (int, error) {
		once.Do(func() { close(writing); <-release })
		return f.Write(p)
	})
	return writing, release
}
