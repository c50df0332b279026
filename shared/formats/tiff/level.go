package tiff

import (
	"encoding/binary"
	"fmt"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/codec"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/ifd"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/jpegseg"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/layout"
)

// maxBands bounds SamplesPerPixel; more is a damaged file.
const maxBands = 64

// Level is one resolution level of an image, or the transparency mask of
// one. It is immutable once Open returns it and safe for concurrent use.
type Level struct {
	Width, Height int
	// TileWidth and TileHeight are the tile size; for a stripped image,
	// the image width and the rows per strip.
	TileWidth, TileHeight  int
	TilesAcross, TilesDown int
	// Tiled is false for a stripped image, which is described but not read.
	Tiled        bool
	Bands        int // samples per pixel
	Bits         int // bits per sample, the same for every band
	SampleFormat SampleFormat
	Compression  Compression
	Photometric  Photometric
	Predictor    int
	// Alpha is the index of the alpha band, -1 when there is none.
	// ExtraSamples 1 is premultiplied alpha, 2 straight alpha; 0
	// (unspecified), or no ExtraSamples tag, is taken for straight alpha
	// when it is the second band of gray or the fourth of RGB, as writers
	// that start from PNG mean it.
	Alpha         int
	Premultiplied bool
	// Mask is the level's transparency mask (NewSubfileType 4 or 5), nil
	// when it has none.
	Mask *Level
	// JPEGTables is the raw JPEGTables tag of a JPEG level, nil otherwise.
	JPEGTables []byte
	// Offset is the offset of the level's IFD in the file; SubIFD says it
	// was listed in the SubIFDs of the full-resolution IFD.
	Offset int64
	SubIFD bool

	order     binary.ByteOrder
	planar    int
	offsets   ifd.Value
	counts    ifd.Value
	tables    []byte // the segments of JPEGTables between SOI and EOI
	opts      *Options
	noData    *float64
	decodeErr error // why Decode refuses this level, nil when it does not
}

// readLevel describes the image of one IFD of a file of size bytes.
func readLevel(d *ifd.IFD, order binary.ByteOrder, size int64, o *Options) (*Level, error) {
	l := &Level{Offset: int64(d.Offset), Alpha: -1, order: order, opts: o}
	if err := l.readSamples(d); err != nil {
		return nil, err
	}
	if err := l.readGeometry(d); err != nil {
		return nil, err
	}
	if l.Tiled {
		if err := l.readTiles(d, size); err != nil {
			return nil, err
		}
	}
	if v, ok := d.Get(tagJPEGTables); ok && l.Compression == CompressionJPEG {
		l.JPEGTables = v.Raw
		if tables, err := jpegseg.Tables(v.Raw); err != nil {
			l.decodeErr = formatErr("level %dx%d: %v", l.Width, l.Height, err)
		} else {
			l.tables = tables
		}
	}
	return l, nil
}

// uniform is the value of tag for n samples, which must all be the same.
func uniform(d *ifd.IFD, tag uint16, n int, def uint64) (uint64, error) {
	v, ok := d.Get(tag)
	if !ok {
		return def, nil
	}
	if v.Len() == 0 {
		return 0, formatErr("tag %d has no value", tag)
	}
	first, ok := v.Uint(0)
	if !ok {
		return 0, formatErr("tag %d of type %d, want an integer", tag, v.Type)
	}
	for i := 1; i < min(n, v.Len()); i++ {
		if u, _ := v.Uint(i); u != first {
			return 0, unsupported("bands of different kinds (tag %d: %d and %d)", tag, first, u)
		}
	}
	return first, nil
}

func (l *Level) readSamples(d *ifd.IFD) error {
	spp := d.Uint(tagSamplesPerPixel, 1)
	if spp == 0 || spp > maxBands {
		return formatErr("%d samples per pixel", spp)
	}
	l.Bands = int(spp)
	bits, err := uniform(d, tagBitsPerSample, l.Bands, 1)
	if err != nil {
		return err
	}
	if bits == 0 || bits > 64 {
		return formatErr("%d bits per sample", bits)
	}
	format, err := uniform(d, tagSampleFormat, l.Bands, uint64(SampleUint))
	if err != nil {
		return err
	}
	l.Bits, l.SampleFormat = int(bits), SampleFormat(format)
	l.Compression = Compression(d.Uint(tagCompression, uint64(CompressionNone)))
	defPhoto := PhotometricMinIsBlack
	if l.Bands >= 3 {
		defPhoto = PhotometricRGB
	}
	l.Photometric = Photometric(d.Uint(tagPhotometric, uint64(defPhoto)))
	l.Predictor = int(d.Uint(tagPredictor, PredictorNone))
	l.planar = int(d.Uint(tagPlanarConfig, 1))
	extra := uint64(0)
	if v, ok := d.Get(tagExtraSamples); ok {
		extra, _ = v.Uint(0)
	}
	l.Alpha, l.Premultiplied = layout.Alpha(int(l.Photometric), l.Bands, extra)
	return nil
}

func (l *Level) readGeometry(d *ifd.IFD) error {
	o := l.opts
	w, h := d.Uint(tagImageWidth, 0), d.Uint(tagImageLength, 0)
	if w == 0 || h == 0 {
		return formatErr("IFD at %d: image of %dx%d pixels", d.Offset, w, h)
	}
	if w > uint64(o.MaxSide) || h > uint64(o.MaxSide) {
		return &LimitError{"image side", max(w, h), uint64(o.MaxSide)}
	}
	var tw, th uint64
	if _, ok := d.Get(tagTileWidth); ok {
		tw, th = d.Uint(tagTileWidth, 0), d.Uint(tagTileLength, 0)
		if tw == 0 || th == 0 {
			return formatErr("IFD at %d: tiles of %dx%d pixels", d.Offset, tw, th)
		}
		if tw > uint64(o.MaxSide) || th > uint64(o.MaxSide) {
			return &LimitError{"tile side", max(tw, th), uint64(o.MaxSide)}
		}
		l.Tiled = true
	} else {
		if _, ok := d.Get(tagStripOffsets); !ok {
			return formatErr("IFD at %d: neither tiles nor strips", d.Offset)
		}
		tw, th = w, min(d.Uint(tagRowsPerStrip, h), h)
		if th == 0 {
			th = h
		}
	}
	l.Width, l.Height, l.TileWidth, l.TileHeight = int(w), int(h), int(tw), int(th)
	l.TilesAcross, l.TilesDown = int((w+tw-1)/tw), int((h+th-1)/th)
	if !l.Tiled {
		return nil
	}
	if px := tw * th; px > uint64(o.MaxTilePixels) {
		return &LimitError{"pixels per tile", px, uint64(o.MaxTilePixels)}
	}
	if n := l.layout().TileBytes(); n > uint64(o.MaxTileBytes) {
		return &LimitError{"decompressed bytes per tile", n, uint64(o.MaxTileBytes)}
	}
	return nil
}

// layout is how the level's tile samples are stored.
func (l *Level) layout() layout.Layout {
	return layout.Layout{
		TileWidth: l.TileWidth, TileHeight: l.TileHeight, Bands: l.Bands, Bits: l.Bits,
		Format: int(l.SampleFormat), Photometric: int(l.Photometric), Compression: int(l.Compression),
		Predictor: l.Predictor, Planar: l.planar, Alpha: l.Alpha, Premultiplied: l.Premultiplied,
	}
}

// readTiles checks the tile arrays: one offset and one count per tile,
// each tile inside the file; a tile with no bytes is sparse.
func (l *Level) readTiles(d *ifd.IFD, size int64) error {
	n := uint64(l.TilesAcross) * uint64(l.TilesDown)
	if n > uint64(l.opts.MaxTilesPerLevel) {
		return &LimitError{"tiles per level", n, uint64(l.opts.MaxTilesPerLevel)}
	}
	if l.planar == 2 {
		n *= uint64(l.Bands)
	}
	offs, ok1 := d.Get(tagTileOffsets)
	cnts, ok2 := d.Get(tagTileByteCounts)
	if !ok1 || !ok2 {
		return formatErr("IFD at %d: tiled without TileOffsets or TileByteCounts", d.Offset)
	}
	for _, v := range []ifd.Value{offs, cnts} {
		if v.Type != ifd.TypeShort && v.Type != ifd.TypeLong && v.Type != ifd.TypeLong8 {
			return formatErr("IFD at %d: tile array of type %d", d.Offset, v.Type)
		}
		if v.Count != n || uint64(v.Len()) != n {
			return formatErr("IFD at %d: %d tile offsets or counts for %d tiles", d.Offset, v.Count, n)
		}
	}
	for i := range int(n) {
		off, _ := offs.Uint(i)
		c, _ := cnts.Uint(i)
		if c == 0 {
			continue
		}
		if off == 0 || off > uint64(size) || c > uint64(size)-off {
			return formatErr("IFD at %d: tile %d (%d bytes at %d) outside the file (%d bytes)", d.Offset, i, c, off, size)
		}
	}
	l.offsets, l.counts = offs, cnts
	return nil
}

// TileRange is where tile (x, y) is stored: ok is false for a sparse tile
// (no bytes: it reads as nodata or transparent), for a tile outside the
// level and for a stripped level.
func (l *Level) TileRange(x, y int) (off, n int64, ok bool) {
	if !l.Tiled || x < 0 || y < 0 || x >= l.TilesAcross || y >= l.TilesDown {
		return 0, 0, false
	}
	i := y*l.TilesAcross + x
	c, _ := l.counts.Uint(i)
	if c == 0 {
		return 0, 0, false
	}
	o, _ := l.offsets.Uint(i)
	return int64(o), int64(c), true
}

// sameLayout reports whether m's pixels are of the same kind as l's, so
// that m can be a reduced-resolution level of l.
func (l *Level) sameLayout(m *Level) bool {
	return l.Bands == m.Bands && l.Bits == m.Bits && l.SampleFormat == m.SampleFormat &&
		l.Photometric == m.Photometric && l.Alpha == m.Alpha && l.planar == m.planar
}

// Decodable says why Decode refuses the level or its mask, or nil when it
// decodes both.
func (l *Level) Decodable() error {
	if l.decodeErr != nil {
		return l.decodeErr
	}
	if l.Mask != nil {
		return l.Mask.decodeErr
	}
	return nil
}

// checkDecodable says why Decode refuses the level (a mask with mask),
// or nil.
func (l *Level) checkDecodable(mask bool) error {
	if !l.Tiled {
		return fmt.Errorf("%w: %dx%d image stored in strips", ErrNotTiled, l.Width, l.Height)
	}
	if l.decodeErr != nil {
		return l.decodeErr
	}
	c := l.Compression
	if c != CompressionJPEG && c != CompressionWebP && !codec.Supported(int(c)) {
		return &UnsupportedError{Feature: "compression " + c.String(), Compression: c}
	}
	if why := l.layout().Check(mask); why != "" {
		return unsupported("%s", why)
	}
	return nil
}
