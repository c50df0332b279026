package tiff

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/gdalmeta"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/geotiff"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/ifd"
)

// maxEntries bounds the entries of one IFD; real files hold a few dozen.
const maxEntries = 4096

// maxTextBytes bounds the text and small binary tags Open loads
// (descriptions, JPEGTables, GeoTIFF tags); longer ones are left unread.
const maxTextBytes = 64 << 10

// File is an opened TIFF: its resolution levels and what the file says
// about them. It holds no reader: tiles are read through the RangeReader
// the caller passes to Level.ReadTiles. A File is immutable once Open
// returns it and safe for concurrent use.
type File struct {
	Size      int64
	BigTIFF   bool
	ByteOrder binary.ByteOrder
	// Levels are the resolution levels, full resolution first, each
	// strictly smaller than the one before.
	Levels []*Level
	// Geo is the georeferencing, nil when the file has none or when it is
	// malformed (Georeferencing says which).
	Geo *geotiff.Georef
	// NoData is GDAL_NODATA, nil when absent or malformed.
	NoData *float64
	// Metadata holds GDAL_METADATA items and the TIFF text tags.
	Metadata gdalmeta.Metadata
	// Structure is the structural metadata ("ghost area") of a GDAL COG,
	// nil when absent. With Structure.MaskInterleaved, ReadTiles with
	// ReadOptions.Mask fetches a tile and its mask in one range read.
	Structure *gdalmeta.Structure
	// Skipped lists the IFDs that are neither a level nor a mask, and why.
	Skipped []Skipped
	// Warnings lists problems that did not stop Open: a malformed
	// GDAL_METADATA, GDAL_NODATA or structural metadata.
	Warnings []string
	// OpenStats counts the range reads Open made.
	OpenStats ReadStats

	geoErr error
}

// Skipped is an IFD that Open did not take for a level or a mask.
type Skipped struct {
	Offset        int64
	SubIFD        bool
	Width, Height int
	Reason        string
}

// Open reads the header and every IFD of a TIFF or BigTIFF file of size
// bytes through r, and describes its levels. It reads opts.FirstRead bytes
// first (where COGs keep all their IFDs) and reads again only for what
// lies outside, the out-of-line values of one IFD together.
func Open(ctx context.Context, r RangeReader, size int64, opts Options) (*File, error) {
	o := opts.withDefaults()
	if size < 8 {
		return nil, formatErr("file of %d bytes", size)
	}
	f := &File{Size: size}
	read := func(off, n int64) ([]byte, error) {
		f.OpenStats.add(ReadStats{Reads: 1, Bytes: n})
		return readExact(ctx, r, off, n)
	}
	first, err := read(0, min(size, o.FirstRead))
	if err != nil {
		return nil, openErr(err)
	}
	lim := ifd.Limits{MaxIFDs: o.MaxIFDs, MaxEntries: maxEntries, MaxBytes: o.MaxIFDBytes, Window: o.IFDRead}
	ir, err := ifd.NewReader(first, size, read, lim)
	if err != nil {
		return nil, openErr(err)
	}
	f.BigTIFF, f.ByteOrder = ir.Big, ir.Order
	f.readStructure(first[min(int64(len(first)), ir.Len()):])
	want := wantFunc(&o)
	chain, err := ir.Chain(ir.First, want)
	if err != nil {
		return nil, openErr(err)
	}
	full := slices.IndexFunc(chain, func(d *ifd.IFD) bool {
		return d.Uint(tagNewSubfileType, 0)&(subfileReduced|subfileMask) == 0
	})
	if full < 0 {
		return nil, formatErr("no full-resolution image: every IFD is a reduced image or a mask")
	}
	var subs []*ifd.IFD
	if v, ok := chain[full].Get(tagSubIFDs); ok {
		for i := range v.Len() {
			off, _ := v.Uint(i)
			sub, err := ir.Chain(off, want)
			if err != nil {
				return nil, openErr(err)
			}
			subs = append(subs, sub...)
		}
	}
	if err := f.buildLevels(chain, full, subs, &o); err != nil {
		return nil, openErr(err)
	}
	f.readTags(chain[full])
	return f, nil
}

// wantFunc says which out-of-line values Open loads: those it uses, within
// bounds. A value left unread reads as missing.
func wantFunc(o *Options) ifd.Want {
	maxArray := uint64(o.MaxTilesPerLevel) * 8 * 4 // offsets of up to 4 planes
	return func(tag uint16, n uint64) bool {
		switch tag {
		case tagTileOffsets, tagTileByteCounts:
			return n <= maxArray
		case tagBitsPerSample, tagSampleFormat, tagExtraSamples, tagSubIFDs:
			return n <= 8*maxBands
		case tagJPEGTables, tagImageDescription, tagSoftware, tagDateTime, tagArtist, tagCopyright,
			tagModelPixelScale, tagModelTiepoint, tagModelTransformation,
			tagGeoKeyDirectory, tagGeoDoubleParams, tagGeoASCIIParams, tagGDALNoData:
			return n <= maxTextBytes
		case tagGDALMetadata:
			return n <= gdalmeta.MaxXMLBytes
		}
		return false
	}
}

// openErr sorts an error met while opening: the reader's errors pass
// through, limits become LimitErrors, the rest FormatErrors.
func openErr(err error) error {
	var (
		re *readError
		le *ifd.LimitError
		fe FormatError
		ue *UnsupportedError
		te *LimitError
	)
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("tiff: %w", err)
	case errors.As(err, &le):
		return &LimitError{What: le.What, Value: le.Value, Limit: le.Limit}
	case errors.As(err, &fe), errors.As(err, &ue), errors.As(err, &te):
		return err
	}
	return FormatError(err.Error())
}

// buildLevels sorts the IFDs into levels, masks and skipped ones.
func (f *File) buildLevels(chain []*ifd.IFD, full int, subs []*ifd.IFD, o *Options) error {
	top, err := readLevel(chain[full], f.ByteOrder, f.Size, o)
	if err != nil {
		return err
	}
	var levels, masks []*Level
	consider := func(d *ifd.IFD, sub bool) error {
		sf := d.Uint(tagNewSubfileType, 0)
		if !sub && sf&(subfileReduced|subfileMask) == 0 {
			f.skip(d, sub, "a page of its own (NewSubfileType 0), not a reduced-resolution level")
			return nil
		}
		l, err := readLevel(d, f.ByteOrder, f.Size, o)
		var le *LimitError
		var ue *UnsupportedError
		if errors.As(err, &le) || errors.As(err, &ue) {
			f.skip(d, sub, err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		l.SubIFD = sub
		switch {
		case sf&subfileMask != 0:
			masks = append(masks, l)
		case l.Tiled != top.Tiled:
			f.skip(d, sub, fmt.Sprintf("tiled %v, the full-resolution image tiled %v", l.Tiled, top.Tiled))
		case !top.sameLayout(l):
			f.skip(d, sub, fmt.Sprintf("%d bands of %d bits (photometric %d), not the full-resolution image's %d of %d (photometric %d)",
				l.Bands, l.Bits, l.Photometric, top.Bands, top.Bits, top.Photometric))
		default:
			levels = append(levels, l)
		}
		return nil
	}
	for i, d := range chain {
		if i == full {
			continue
		}
		if err := consider(d, false); err != nil {
			return err
		}
	}
	for _, d := range subs {
		if err := consider(d, true); err != nil {
			return err
		}
	}
	f.orderLevels(top, levels)
	for _, m := range masks {
		f.attachMask(m)
	}
	return nil
}

// orderLevels keeps the full-resolution level and, largest first, each
// level strictly smaller than the one kept before it.
func (f *File) orderLevels(top *Level, levels []*Level) {
	slices.SortStableFunc(levels, func(a, b *Level) int {
		return cmp.Compare(b.Width*b.Height, a.Width*a.Height)
	})
	f.Levels = []*Level{top}
	for _, l := range levels {
		prev := f.Levels[len(f.Levels)-1]
		if l.Width > prev.Width || l.Height > prev.Height || l.Width == prev.Width && l.Height == prev.Height {
			f.skipLevel(l, fmt.Sprintf("not smaller than the %dx%d level before it", prev.Width, prev.Height))
			continue
		}
		f.Levels = append(f.Levels, l)
	}
	for _, l := range f.Levels {
		l.decodeErr = l.checkDecodable(false)
	}
}

// attachMask makes m the mask of the level of its size.
func (f *File) attachMask(m *Level) {
	i := slices.IndexFunc(f.Levels, func(l *Level) bool { return l.Width == m.Width && l.Height == m.Height })
	switch {
	case i < 0:
		f.skipLevel(m, "a mask of no level's size")
	case f.Levels[i].Mask != nil:
		f.skipLevel(m, "a second mask of one level")
	case !m.Tiled || m.TileWidth != f.Levels[i].TileWidth || m.TileHeight != f.Levels[i].TileHeight:
		f.skipLevel(m, "a mask whose tiles are not its level's")
	default:
		m.decodeErr = m.checkDecodable(true)
		f.Levels[i].Mask = m
	}
}

func (f *File) skip(d *ifd.IFD, sub bool, reason string) {
	f.Skipped = append(f.Skipped, Skipped{
		Offset: int64(d.Offset), SubIFD: sub, Reason: reason,
		Width: int(min(d.Uint(tagImageWidth, 0), 1<<31)), Height: int(min(d.Uint(tagImageLength, 0), 1<<31)),
	})
}

func (f *File) skipLevel(l *Level, reason string) {
	f.Skipped = append(f.Skipped, Skipped{Offset: l.Offset, SubIFD: l.SubIFD, Width: l.Width, Height: l.Height, Reason: reason})
}
