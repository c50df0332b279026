package pmtiles

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// OpenDataset opens one version of an archive as a formats.Dataset: its
// header and root directory from obj.First (the first RootWindow bytes),
// validated; leaves and tiles read through obj.Range, leaves kept in
// opts.Cache. A malformed archive is refused (formats.ErrInvalid).
func OpenDataset(_ context.Context, obj formats.Object, opts formats.Options) (formats.Dataset, error) {
	if obj.Size < HeaderLen {
		return nil, formats.Invalid(fmt.Errorf("pmtiles: archive of %d bytes is shorter than its header: %w", obj.Size, ErrInvalid))
	}
	var leaves LeafCache
	if opts.Cache != nil {
		leaves = leafCache{opts.Cache}
	}
	r, err := NewReader(obj.First, obj.Size, obj.Range, Options{Leaves: leaves})
	if err != nil {
		return nil, formats.Invalid(err)
	}
	return &dataset{r: r, src: obj.Range, maxTile: opts.MaxTileBytes}, nil
}

// dataset is an open archive version.
type dataset struct {
	r       *Reader
	src     RangeReader
	maxTile int64 // MAX_TILE_BYTES; zero or negative: off
}

func (d *dataset) Accepts(r formats.TileRequest) bool {
	if r.Variant != "" {
		return false
	}
	for _, e := range d.r.Header().TileType.Exts() {
		if strings.EqualFold(e, r.Ext) {
			return true
		}
	}
	return false
}

// Tile reads z/x/y. A tile past MAX_TILE_BYTES is refused from its
// directory entry, before a byte of it is read or allocated.
func (d *dataset) Tile(ctx context.Context, tr formats.TileRequest) (formats.Tile, error) {
	z, x, y := tr.Z, tr.X, tr.Y
	h := d.r.Header()
	rg, ok, err := d.r.Find(ctx, z, x, y)
	if err != nil {
		return formats.Tile{}, err
	}
	if !ok {
		return formats.Tile{}, tile.ErrNotFound
	}
	if d.maxTile > 0 && rg.Length > d.maxTile {
		return formats.Tile{}, fmt.Errorf("pmtiles: tile %d/%d/%d is %d bytes, MAX_TILE_BYTES is %d: %w", z, x, y, rg.Length, d.maxTile, tile.ErrTooLarge)
	}
	if rg.Length > DefaultMaxTileBytes {
		return formats.Tile{}, fmt.Errorf("pmtiles: tile %d/%d/%d of %d bytes: %w", z, x, y, rg.Length, ErrInvalid)
	}
	t := formats.Tile{
		ContentType:     h.TileType.ContentType(),
		ContentEncoding: h.TileCompression.ContentEncoding(),
		Version:         strconv.FormatInt(rg.Offset, 10) + "+" + strconv.FormatInt(rg.Length, 10),
	}
	if rg.Length == 0 {
		t.ContentEncoding = ""
		return t, nil
	}
	body, err := d.src.ReadRange(ctx, rg.Offset, rg.Length)
	if err != nil {
		return formats.Tile{}, err
	}
	if int64(len(body)) != rg.Length {
		return formats.Tile{}, fmt.Errorf("pmtiles: tile read %d of %d bytes: %w", len(body), rg.Length, ErrInvalid)
	}
	t.Body = body
	return t, nil
}

func (d *dataset) TileJSON(ctx context.Context, baseURL, name string) (tileset.TileJSON, error) {
	md, err := d.r.Metadata(ctx)
	if err != nil {
		return tileset.TileJSON{}, err
	}
	return tileset.FromArchive(baseURL, name, d.r.Header().Tileset(), md)
}

// Close releases nothing: an archive holds no resource but its reader's.
func (d *dataset) Close() error { return nil }

// Tileset is what the header says of the archive's tileset.
func (h Header) Tileset() tileset.Archive {
	return tileset.Archive{
		Ext: h.TileType.Ext(), Vector: h.TileType.Vector(),
		MinZoom: int(h.MinZoom), MaxZoom: int(h.MaxZoom),
		Bounds: h.Bounds(), Center: h.Center(),
	}
}

// leafCache keeps decoded leaf directories in the version's formats.Cache,
// keyed by the leaf's range.
type leafCache struct{ c formats.Cache }

func leafKey(r Range) string {
	return strconv.FormatInt(r.Offset, 10) + "+" + strconv.FormatInt(r.Length, 10)
}

func (l leafCache) Get(r Range) ([]Entry, bool) {
	v, ok := l.c.Get(leafKey(r))
	if !ok {
		return nil, false
	}
	d, ok := v.([]Entry)
	return d, ok
}

func (l leafCache) Put(r Range, entries []Entry) {
	l.c.Put(leafKey(r), entries, tile.AllocBytes(cap(entries)*EntryBytes)+24)
}
