package tiff

import (
	"bytes"
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"
)

// TestRangeReads counts the range reads of a COG written by GDAL: Open
// makes one, a tile one, a tile and its mask one, and a block of adjacent
// tiles fewer than one per tile.
func TestRangeReads(t *testing.T) {
	needGDAL(t)
	needVips(t)
	t.Parallel()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "cog.tif")
	source{1024, 1024, 4, true}.writePNG(t, src)
	run(t, "gdal_translate", "-q", "-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=JPEG", src, path)
	f, cr := openFile(t, path)
	if f.OpenStats.Reads != 1 || len(f.Levels) != 3 {
		t.Fatalf("got %d reads to open %d levels, want 1 read, 3 levels", f.OpenStats.Reads, len(f.Levels))
	}
	if f.Structure == nil || !f.Structure.MaskInterleaved || !f.Structure.Leader || !f.Structure.Trailer || !f.Structure.RowMajor {
		t.Fatalf("got structural metadata %+v, want row-major blocks with leader, trailer and masks interleaved", f.Structure)
	}
	l := f.Levels[0]
	b, _ := os.ReadFile(path)
	block := []image.Point{{1, 1}, {2, 1}, {1, 2}, {2, 2}}
	tests := []struct {
		name     string
		tiles    []image.Point
		opts     ReadOptions
		maxReads int
	}{
		{"one tile", []image.Point{{2, 3}}, ReadOptions{}, 1},
		{"one tile and its mask", []image.Point{{2, 3}}, ReadOptions{Mask: true}, 1},
		{"a 2x2 block", block, ReadOptions{}, 3},
		{"a 2x2 block and masks", block, ReadOptions{Mask: true}, 3},
		{"a row of four", []image.Point{{0, 1}, {1, 1}, {2, 1}, {3, 1}}, ReadOptions{}, 1},
		{"a 2x2 block read apart", block, ReadOptions{MaxGap: 1, MaxSpan: 1}, 4},
		{"the same tile twice", []image.Point{{0, 0}, {0, 0}}, ReadOptions{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: cr.r}
			raws, stats, err := l.ReadTiles(context.Background(), cr, tc.tiles, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Reads != int(cr.reads.Load()) || stats.Bytes != cr.bytes.Load() {
				t.Errorf("got stats %+v, want the %d reads of %d bytes made", stats, cr.reads.Load(), cr.bytes.Load())
			}
			if stats.Reads > tc.maxReads {
				t.Errorf("got %d reads, want at most %d", stats.Reads, tc.maxReads)
			}
			t.Logf("%d tiles: %d reads, %d bytes", len(tc.tiles), stats.Reads, stats.Bytes)
			for i, raw := range raws {
				off, n, _ := l.TileRange(tc.tiles[i].X, tc.tiles[i].Y)
				if raw.Tile != tc.tiles[i] || !bytes.Equal(raw.Data, b[off:off+n]) {
					t.Errorf("tile %v: got other bytes than the file's %d at %d", tc.tiles[i], n, off)
				}
				if tc.opts.Mask {
					moff, mn, _ := l.Mask.TileRange(tc.tiles[i].X, tc.tiles[i].Y)
					if !raw.HasMask || !bytes.Equal(raw.Mask, b[moff:moff+mn]) {
						t.Errorf("tile %v: got other mask bytes than the file's %d at %d", tc.tiles[i], mn, moff)
					}
				}
			}
		})
	}
}

// TestRangeReadsOfALibvipsPyramid: libvips writes each IFD after its
// level's tiles, so Open reads more than once; a tile is still one read.
func TestRangeReadsOfALibvipsPyramid(t *testing.T) {
	needVips(t)
	t.Parallel()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "pyr.tif")
	source{2000, 1500, 3, true}.writePNG(t, src)
	run(t, "vips", "tiffsave", src, path, "--tile", "--pyramid", "--compression", "jpeg", "--tile-width", "256", "--tile-height", "256")
	f, cr := openFile(t, path)
	t.Logf("Open: %d reads, %d bytes, %d levels, file of %d bytes", f.OpenStats.Reads, f.OpenStats.Bytes, len(f.Levels), f.Size)
	if f.OpenStats.Reads > 2*len(f.Levels)+1 {
		t.Errorf("got %d reads to open %d levels, want at most %d", f.OpenStats.Reads, len(f.Levels), 2*len(f.Levels)+1)
	}
	_, stats, err := f.Levels[0].ReadTiles(context.Background(), cr.r, []image.Point{{3, 2}}, ReadOptions{})
	if err != nil || stats.Reads != 1 {
		t.Errorf("got %d reads (%v) for one tile, want 1", stats.Reads, err)
	}
}

// TestRangeReadsOfALargeCOG opens a COG whose tile arrays do not fit in
// the first read: GDAL writes every IFD first and their arrays after them,
// so the arrays of all levels come in one more read.
func TestRangeReadsOfALargeCOG(t *testing.T) {
	needGDAL(t)
	t.Parallel()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "empty.tif"), filepath.Join(dir, "cog.tif")
	run(t, "gdal_create", "-q", "-outsize", "8192", "8192", "-bands", "1", "-ot", "Byte", "-of", "GTiff",
		"-co", "TILED=YES", "-co", "SPARSE_OK=TRUE", src)
	run(t, "gdal_translate", "-q", "-of", "COG", "-co", "BLOCKSIZE=128", "-co", "SPARSE_OK=TRUE", "-co", "COMPRESS=DEFLATE", src, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first int64
		reads int
	}{{0, 1}, {4 << 10, 2}} {
		f, err := Open(context.Background(), ReaderAt(bytes.NewReader(b)), int64(len(b)), Options{FirstRead: tc.first})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Levels) != 7 || f.OpenStats.Reads != tc.reads {
			t.Errorf("first read of %d bytes: got %d levels in %d reads, want 7 in %d", tc.first, len(f.Levels), f.OpenStats.Reads, tc.reads)
		}
		if _, _, ok := f.Levels[0].TileRange(5, 5); ok {
			t.Error("got a stored tile in an empty sparse COG")
		}
	}
}
