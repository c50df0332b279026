package tiff

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	tt "github.com/tilesieve/tilesieve/shared/formats/tiff/internal/tifftest"
)

// ifd0 is a 64x64 gray image in four 32x32 uncompressed tiles.
func ifd0() []tt.Entry {
	return []tt.Entry{
		tt.Ints(tagImageWidth, tt.Short, 64),
		tt.Ints(tagImageLength, tt.Short, 64),
		tt.Ints(tagBitsPerSample, tt.Short, 8),
		tt.Ints(tagCompression, tt.Short, 1),
		tt.Ints(tagPhotometric, tt.Short, 1),
		tt.Ints(tagSamplesPerPixel, tt.Short, 1),
		tt.Ints(tagTileWidth, tt.Short, 32),
		tt.Ints(tagTileLength, tt.Short, 32),
		{Tag: tagTileOffsets, Type: tt.Long, BlobOffsets: []int{0, 1, 2, 3}},
		tt.Ints(tagTileByteCounts, tt.Long, 1024, 1024, 1024, 1024),
	}
}

// with returns entries with e in place of the entry of its tag, or added.
func with(entries []tt.Entry, es ...tt.Entry) []tt.Entry {
	out := slices.Clone(entries)
	for _, e := range es {
		i := slices.IndexFunc(out, func(x tt.Entry) bool { return x.Tag == e.Tag })
		if i < 0 {
			out = append(out, e)
			slices.SortFunc(out, func(a, b tt.Entry) int { return int(a.Tag) - int(b.Tag) })
		} else {
			out[i] = e
		}
	}
	return out
}

// without returns entries without the entry of tag.
func without(entries []tt.Entry, tag uint16) []tt.Entry {
	return slices.DeleteFunc(slices.Clone(entries), func(e tt.Entry) bool { return e.Tag == tag })
}

// tiles is four 32x32 tiles of gray ramps.
func tiles() [][]byte {
	var out [][]byte
	for k := range 4 {
		b := make([]byte, 1024)
		for i := range b {
			b[i] = byte(i + 64*k)
		}
		out = append(out, b)
	}
	return out
}

func openBytes(b []byte, o Options) (*File, error) {
	return Open(context.Background(), ReaderAt(bytes.NewReader(b)), int64(len(b)), o)
}

type errKind int

const (
	isFormat errKind = iota
	isLimit
	isUnsupported
)

func checkKind(t *testing.T, err error, kind errKind, substr string) {
	t.Helper()
	var (
		fe FormatError
		le *LimitError
		ue *UnsupportedError
	)
	ok := map[errKind]bool{isFormat: errors.As(err, &fe), isLimit: errors.As(err, &le), isUnsupported: errors.As(err, &ue)}[kind]
	if !ok || !strings.Contains(err.Error(), substr) || !strings.HasPrefix(err.Error(), "tiff: ") {
		t.Fatalf("got error %v, want one of kind %d containing %q", err, kind, substr)
	}
}

func TestOpenHostile(t *testing.T) {
	t.Parallel()
	base := ifd0()
	tests := []struct {
		name   string
		f      tt.File
		kind   errKind
		substr string
	}{
		{"absurd width", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagImageWidth, tt.Long, 1<<30))}},
			isLimit, "image side"},
		{"zero height", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagImageLength, tt.Long, 0))}},
			isFormat, "0 pixels"},
		{"2^40 tiles", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagImageWidth, tt.Long, 1<<20),
			tt.Ints(tagImageLength, tt.Long, 1<<20), tt.Ints(tagTileWidth, tt.Long, 1), tt.Ints(tagTileLength, tt.Long, 1))}},
			isLimit, "tiles per level"},
		{"huge tiles", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagTileWidth, tt.Long, 1<<15), tt.Ints(tagTileLength, tt.Long, 1<<15))}},
			isLimit, "pixels per tile"},
		{"65 samples per pixel", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagSamplesPerPixel, tt.Short, 65))}},
			isFormat, "samples per pixel"},
		{"IFD chain loop", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{base, with(base, tt.Ints(tagNewSubfileType, tt.Long, 1))}, Next: []int{1, 0}},
			isFormat, "reached twice"},
		{"SubIFD pointing back", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Entry{Tag: tagSubIFDs, Type: tt.Long, IFDOffsets: []int{0}})}},
			isFormat, "reached twice"},
		{"SubIFD chain looping", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{
			with(base, tt.Entry{Tag: tagSubIFDs, Type: tt.Long, IFDOffsets: []int{1}}), base, base}, Next: []int{-1, 2, 1}},
			isFormat, "reached twice"},
		{"tile past the end", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagTileByteCounts, tt.Long, 1024, 1024, 1024, 1<<20))}},
			isFormat, "outside the file"},
		{"tile offset and count overflowing", tt.File{Big: true, Blobs: tiles(), IFDs: [][]tt.Entry{with(base,
			tt.Ints(tagTileByteCounts, tt.Long8, 1024, 1024, 1024, 1<<64-100))}},
			isFormat, "outside the file"},
		{"three offsets for four tiles", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Entry{Tag: tagTileOffsets, Type: tt.Long, BlobOffsets: []int{0, 1, 2}})}},
			isFormat, "3 tile offsets"},
		{"no tile offsets", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{without(base, tagTileOffsets)}},
			isFormat, "without TileOffsets"},
		{"neither tiles nor strips", tt.File{IFDs: [][]tt.Entry{without(without(without(without(base, tagTileWidth), tagTileLength), tagTileOffsets), tagTileByteCounts)}},
			isFormat, "neither tiles nor strips"},
		{"only reduced images", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(base, tt.Ints(tagNewSubfileType, tt.Long, 1))}},
			isFormat, "no full-resolution image"},
		{"first IFD past the end", tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{base}, First: 1 << 30},
			isFormat, "outside the file"},
		{"too many IFDs", tt.File{Blobs: tiles(), IFDs: slices.Repeat([][]tt.Entry{with(base, tt.Ints(tagNewSubfileType, tt.Long, 1))}, 70)},
			isLimit, "IFDs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := openBytes(tc.f.Bytes(), Options{})
			checkKind(t, err, tc.kind, tc.substr)
		})
	}
}

// TestOpenBoundsBeforeAllocating opens a file declaring 2^40 tiles and a
// TileOffsets array of 2^30 entries: the counts are refused before any
// array is read or allocated.
func TestOpenBoundsBeforeAllocating(t *testing.T) {
	f := tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(ifd0(),
		tt.Ints(tagImageWidth, tt.Long, 1<<20), tt.Ints(tagImageLength, tt.Long, 1<<20),
		tt.Ints(tagTileWidth, tt.Long, 1), tt.Ints(tagTileLength, tt.Long, 1),
		tt.Entry{Tag: tagTileOffsets, Type: tt.Long, Ints: []uint64{8, 8}, Count: 1 << 30},
		tt.Entry{Tag: tagTileByteCounts, Type: tt.Long, Ints: []uint64{8, 8}, Count: 1 << 30},
	)}}
	b := f.Bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	file, err := openBytes(b, Options{})
	runtime.ReadMemStats(&after)
	checkKind(t, err, isLimit, "tiles per level")
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("got %d bytes allocated, want at most 1 MiB", got)
	}
	if file != nil {
		t.Errorf("got a File, want none")
	}
}

func TestTruncatedFiles(t *testing.T) {
	t.Parallel()
	b := tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{with(ifd0(), tt.Text(tagArtist, "someone"))}}.Bytes()
	if _, err := openBytes(b, Options{}); err != nil {
		t.Fatalf("the whole file: %v", err)
	}
	for n := range len(b) {
		f, err := openBytes(b[:n], Options{})
		if err == nil {
			// Cut in the tiles: Open cannot tell, the tiles past the end are refused.
			t.Fatalf("cut at %d of %d: got a file with %d levels, want an error", n, len(b), len(f.Levels))
		}
		var fe FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("cut at %d: got %v, want a FormatError", n, err)
		}
	}
}

func TestNotServable(t *testing.T) {
	t.Parallel()
	base := ifd0()
	strips := with(without(without(without(without(base, tagTileWidth), tagTileLength), tagTileOffsets), tagTileByteCounts),
		tt.Ints(tagRowsPerStrip, tt.Short, 32),
		tt.Entry{Tag: tagStripOffsets, Type: tt.Long, BlobOffsets: []int{0, 1}},
		tt.Ints(279, tt.Long, 2048, 2048))
	big := with(base, tt.Ints(tagImageWidth, tt.Long, 2048), tt.Ints(tagImageLength, tt.Long, 2048),
		tt.Ints(tagTileWidth, tt.Long, 1024), tt.Ints(tagTileLength, tt.Long, 1024),
		tt.Ints(tagTileOffsets, tt.Long, 0, 0, 0, 0), tt.Ints(tagTileByteCounts, tt.Long, 0, 0, 0, 0))
	tests := []struct {
		name   string
		ifds   [][]tt.Entry
		is     error
		kind   errKind
		substr string
	}{
		{"strips", [][]tt.Entry{strips}, ErrNotTiled, 0, "vips tiffsave in out.tif --tile --pyramid"},
		{"large without levels", [][]tt.Entry{big}, ErrNotPyramidal, 0, "gdal_translate -of COG"},
		{"old-style JPEG", [][]tt.Entry{with(base, tt.Ints(tagCompression, tt.Short, 6))}, nil, isUnsupported, "old-style JPEG (6)"},
		{"LZMA", [][]tt.Entry{with(base, tt.Ints(tagCompression, tt.Short, 34925))}, nil, isUnsupported, "LZMA (34925)"},
		{"planar RGB", [][]tt.Entry{with(base, tt.Ints(tagSamplesPerPixel, tt.Short, 3), tt.Ints(tagBitsPerSample, tt.Short, 8, 8, 8),
			tt.Ints(tagPhotometric, tt.Short, 2), tt.Ints(tagPlanarConfig, tt.Short, 2),
			tt.Entry{Tag: tagTileOffsets, Type: tt.Long, BlobOffsets: []int{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}},
			tt.Ints(tagTileByteCounts, tt.Long, slices.Repeat([]uint64{1024}, 12)...))}, nil, isUnsupported, "PlanarConfiguration 2"},
		{"CMYK", [][]tt.Entry{with(base, tt.Ints(tagSamplesPerPixel, tt.Short, 4), tt.Ints(tagBitsPerSample, tt.Short, 8, 8, 8, 8),
			tt.Ints(tagPhotometric, tt.Short, 5))}, nil, isUnsupported, "photometric 5"},
		{"mixed bits", [][]tt.Entry{with(base, tt.Ints(tagSamplesPerPixel, tt.Short, 2), tt.Ints(tagBitsPerSample, tt.Short, 8, 16))}, nil, isUnsupported, "different kinds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := openBytes(tt.File{Blobs: tiles(), IFDs: tc.ifds}.Bytes(), Options{})
			if err != nil {
				if tc.is == nil {
					checkKind(t, err, tc.kind, tc.substr)
					return
				}
				t.Fatal(err)
			}
			err = Validate(f)
			if tc.is != nil {
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.substr) {
					t.Fatalf("got %v, want %v saying %q", err, tc.is, tc.substr)
				}
			} else {
				checkKind(t, err, tc.kind, tc.substr)
			}
			l := f.Levels[0]
			if _, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(nil)), []image.Point{{0, 0}}, ReadOptions{}); tc.is == ErrNotTiled && !errors.Is(err, ErrNotTiled) {
				t.Errorf("ReadTiles: got %v, want ErrNotTiled", err)
			}
			if tc.is == nil {
				if _, err := l.Decode(Raw{Data: []byte{1}}); err == nil {
					t.Error("Decode: got no error, want one")
				}
			}
		})
	}
}

func TestSkippedIFDs(t *testing.T) {
	t.Parallel()
	base := ifd0()
	reduced := with(base, tt.Ints(tagNewSubfileType, tt.Long, 1), tt.Ints(tagImageWidth, tt.Short, 32), tt.Ints(tagImageLength, tt.Short, 32),
		tt.Entry{Tag: tagTileOffsets, Type: tt.Long, BlobOffsets: []int{0}}, tt.Ints(tagTileByteCounts, tt.Long, 1024))
	thumbnail := with(without(without(without(without(reduced, tagTileWidth), tagTileLength), tagTileOffsets), tagTileByteCounts),
		tt.Entry{Tag: tagStripOffsets, Type: tt.Long, BlobOffsets: []int{0}})
	rgb := with(reduced, tt.Ints(tagSamplesPerPixel, tt.Short, 3), tt.Ints(tagPhotometric, tt.Short, 2), tt.Ints(tagImageWidth, tt.Short, 16))
	mask := with(reduced, tt.Ints(tagNewSubfileType, tt.Long, 5), tt.Ints(tagImageWidth, tt.Short, 20), tt.Ints(tagBitsPerSample, tt.Short, 1),
		tt.Ints(tagPhotometric, tt.Short, 4))
	page := with(base, tt.Ints(tagImageWidth, tt.Short, 32))
	same := reduced
	f, err := openBytes(tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{base, thumbnail, rgb, mask, page, reduced, same}}.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Levels) != 2 || f.Levels[1].Width != 32 {
		t.Fatalf("got %d levels, want 2 (64 and 32 wide)", len(f.Levels))
	}
	want := []string{"tiled false", "3 bands", "a mask of no level's size", "a page of its own", "not smaller"}
	if len(f.Skipped) != len(want) {
		t.Fatalf("got skipped %+v, want %d", f.Skipped, len(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(f.Skipped, func(s Skipped) bool { return strings.Contains(s.Reason, w) }) {
			t.Errorf("got skipped %+v, want one saying %q", f.Skipped, w)
		}
	}
}

// bomb is 16 MiB of zeros compressed with Deflate into about 16 KiB.
var bomb = sync.OnceValue(func() []byte { return deflate(make([]byte, 16<<20)) })

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestDecodeHostile(t *testing.T) {
	t.Parallel()
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 16, 16)), nil); err != nil {
		t.Fatal(err)
	}
	deflateGray := with(ifd0(), tt.Ints(tagCompression, tt.Short, 8))
	tests := []struct {
		name   string
		ifd    []tt.Entry
		tile   []byte
		kind   errKind
		substr string
	}{
		{"deflate bomb", deflateGray, bomb(), isFormat, "past the size of the tile"},
		{"deflate short", deflateGray, deflate(make([]byte, 1000)), isFormat, "short of the size"},
		{"deflate damaged", deflateGray, []byte{0x78, 0x9c, 1, 2, 3}, isFormat, "tile (0,0)"},
		{"uncompressed short", ifd0(), make([]byte, 100), isFormat, "short"},
		{"jpeg of another size", with(ifd0(), tt.Ints(tagCompression, tt.Short, 7)), jpg.Bytes(), isFormat, "frame of 16x16 pixels in tiles of 32x32"},
		{"jpeg garbage", with(ifd0(), tt.Ints(tagCompression, tt.Short, 7)), []byte{0xFF, 0xD8, 1, 2, 3, 4}, isFormat, "tile (0,0)"},
		{"webp garbage", with(ifd0(), tt.Ints(tagCompression, tt.Short, 50001), tt.Ints(tagSamplesPerPixel, tt.Short, 3),
			tt.Ints(tagBitsPerSample, tt.Short, 8, 8, 8), tt.Ints(tagPhotometric, tt.Short, 2)), []byte("RIFF1234WEBPVP8 "), isFormat, "tile (0,0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			blobs := tiles()
			blobs[0] = tc.tile
			ifd := with(tc.ifd, tt.Ints(tagTileByteCounts, tt.Long, uint64(len(tc.tile)), 1024, 1024, 1024))
			b := tt.File{Blobs: blobs, IFDs: [][]tt.Entry{ifd}}.Bytes()
			f, err := openBytes(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			l := f.Levels[0]
			raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(b)), []image.Point{{0, 0}}, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Decode(raws[0])
			checkKind(t, err, tc.kind, tc.substr)
		})
	}
}

// TestDecodeBombAllocatesNoMore decodes a 16 MiB Deflate bomb stored as a
// 32x32 tile: Decode allocates about the tile, not the bomb.
func TestDecodeBombAllocatesNoMore(t *testing.T) {
	blobs := tiles()
	blobs[0] = bomb()
	ifd := with(ifd0(), tt.Ints(tagCompression, tt.Short, 8), tt.Ints(tagTileByteCounts, tt.Long, uint64(len(blobs[0])), 1024, 1024, 1024))
	b := tt.File{Blobs: blobs, IFDs: [][]tt.Entry{ifd}}.Bytes()
	f, err := openBytes(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := f.Levels[0]
	raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(b)), []image.Point{{0, 0}}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = l.Decode(raws[0])
	runtime.ReadMemStats(&after)
	checkKind(t, err, isFormat, "past the size of the tile")
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Errorf("got %d bytes allocated, want at most 256 KiB", got)
	}
}

func TestReadTilesLimits(t *testing.T) {
	t.Parallel()
	b := tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{ifd0()}}.Bytes()
	f, err := openBytes(b, Options{MaxStoredTileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	l := f.Levels[0]
	r := ReaderAt(bytes.NewReader(b))
	_, _, err = l.ReadTiles(context.Background(), r, []image.Point{{0, 0}}, ReadOptions{})
	checkKind(t, err, isLimit, "stored tile bytes 1024")
	if _, _, err := l.ReadTiles(context.Background(), r, []image.Point{{2, 0}}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("got %v for a tile outside the level, want an error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, _ = openBytes(b, Options{})
	if _, _, err := f.Levels[0].ReadTiles(ctx, r, []image.Point{{0, 0}}, ReadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v with a cancelled context, want context.Canceled", err)
	}
	if _, err := l.Decode(Raw{Tile: image.Pt(5, 5), Data: []byte{1}}); err == nil {
		t.Error("got no error decoding a tile outside the level")
	}
}

// TestDecodeSmallFile decodes a file written here, exactly, in both byte
// orders and both TIFF sizes.
func TestDecodeSmallFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		order tt.Order
		big   bool
	}{{"II", binary.LittleEndian, false}, {"MM", binary.BigEndian, false}, {"II BigTIFF", binary.LittleEndian, true}, {"MM BigTIFF", binary.BigEndian, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tiles()
			b := tt.File{Order: tc.order, Big: tc.big, Blobs: want, IFDs: [][]tt.Entry{ifd0()}}.Bytes()
			f, err := openBytes(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			raws, tiles := decodeLevel(t, writeTemp(t, b), f.Levels[0], false)
			for i, tile := range tiles {
				g, ok := tile.Image.(*image.Gray)
				if !ok || !bytes.Equal(g.Pix, want[i]) {
					t.Errorf("tile %v: got %T, other pixels than stored", raws[i].Tile, tile.Image)
				}
			}
		})
	}
}

// TestJPEGGray decodes a gray JPEG tile stored without JPEGTables, as
// MinIsBlack and as MinIsWhite (inverted by Decode, refused by WholeJPEG).
func TestJPEGGray(t *testing.T) {
	t.Parallel()
	src := image.NewGray(image.Rect(0, 0, 32, 32))
	for i := range src.Pix {
		src.Pix[i] = uint8(4 * (i % 32))
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, src, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		photo uint64
		want  func(v uint8) uint8
	}{{"min is black", 1, func(v uint8) uint8 { return v }}, {"min is white", 0, func(v uint8) uint8 { return 255 - v }}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			blobs := tiles()
			blobs[0] = jpg.Bytes()
			ifd := with(ifd0(), tt.Ints(tagCompression, tt.Short, 7), tt.Ints(tagPhotometric, tt.Short, tc.photo),
				tt.Ints(tagTileByteCounts, tt.Long, uint64(jpg.Len()), 0, 0, 0))
			b := tt.File{Blobs: blobs, IFDs: [][]tt.Entry{ifd}}.Bytes()
			f, err := openBytes(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			l := f.Levels[0]
			raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(b)), []image.Point{{0, 0}, {1, 0}}, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tile, err := l.Decode(raws[0])
			if err != nil {
				t.Fatal(err)
			}
			g := tile.Image.(*image.Gray)
			for _, x := range []int{0, 10, 31} {
				if got, want := int(g.GrayAt(x, 5).Y), int(tc.want(uint8(4*x))); got < want-2 || got > want+2 {
					t.Errorf("pixel %d: got %d, want %d", x, got, want)
				}
			}
			_, err = l.WholeJPEG(raws[0].Data)
			if white := tc.photo == 0; white != (err != nil) {
				t.Errorf("WholeJPEG: got %v", err)
			}
			if sparse, err := l.Decode(raws[1]); err != nil || !raws[1].Sparse || sparse.Image.(*image.Gray).Pix[0] != 0 {
				t.Errorf("sparse tile: got %v, want a gray tile of 0", err)
			}
		})
	}
}
