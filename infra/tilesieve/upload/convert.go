package upload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// Conversion says what a conversion to PMTiles wrote.
type Conversion struct {
	Source string        // the database or directory converted
	Stats  pmwrite.Stats // what the archive holds
}

// headerKeys are metadata fields the archive's header carries; they are
// not repeated in its JSON metadata.
var headerKeys = []string{"bounds", "center", "minzoom", "maxzoom", "format"}

// archiveMetadata turns MBTiles-style metadata (the metadata table, or a
// tippecanoe metadata.json: values as strings, vector_layers inside the
// string field json) into the archive's JSON metadata and header bounds and
// center, as PMTiles readers expect them: vector_layers and tilestats at the
// top level, bounds and center in the header only.
func archiveMetadata(m map[string]json.RawMessage, where string) (meta []byte, bounds *[4]float64, center *[3]float64, err error) {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	if raw, ok := out["json"]; ok {
		var inner string
		if json.Unmarshal(raw, &inner) == nil {
			var sub map[string]json.RawMessage
			if err := json.Unmarshal([]byte(inner), &sub); err != nil || sub == nil {
				return nil, nil, nil, fmt.Errorf("%s: field json: not a JSON object", where)
			}
			for k, v := range sub {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			delete(out, "json")
		}
	}
	if _, ok := out["bounds"]; ok {
		v, err := numbers(out["bounds"], 4, 4)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: bounds: %w", where, err)
		}
		bounds = &[4]float64{v[0], v[1], v[2], v[3]}
		// Some tools write bounds past the Web Mercator square.
		bounds[0], bounds[2] = max(bounds[0], -180), min(bounds[2], 180)
		bounds[1], bounds[3] = max(bounds[1], -90), min(bounds[3], 90)
	}
	if _, ok := out["center"]; ok {
		v, err := numbers(out["center"], 2, 3)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: center: %w", where, err)
		}
		c := [3]float64{v[0], v[1], -1}
		if len(v) == 3 {
			c[2] = v[2]
		}
		center = &c
	}
	for _, k := range headerKeys {
		delete(out, k)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	return b, bounds, center, nil
}

// numbers reads between lo and hi numbers from a JSON array or a string of
// comma-separated numbers ("-180,-85,180,85").
func numbers(raw json.RawMessage, lo, hi int) ([]float64, error) {
	var out []float64
	var s string
	switch {
	case json.Unmarshal(raw, &out) == nil:
	case json.Unmarshal(raw, &s) == nil:
		for _, p := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("%q: not numbers", s)
			}
			out = append(out, v)
		}
	default:
		return nil, fmt.Errorf("%s: want numbers", raw)
	}
	if len(out) < lo || len(out) > hi {
		return nil, fmt.Errorf("%d numbers, want %d to %d", len(out), lo, hi)
	}
	return out, nil
}

// tileType is the PMTiles tile type of tiles with extension ext.
func tileType(ext string) pmtiles.TileType {
	switch strings.ToLower(ext) {
	case "pbf", "mvt":
		return pmtiles.TileTypeMVT
	case "png":
		return pmtiles.TileTypePNG
	case "jpg", "jpeg":
		return pmtiles.TileTypeJPEG
	case "webp":
		return pmtiles.TileTypeWebP
	case "avif":
		return pmtiles.TileTypeAVIF
	case "mlt":
		return pmtiles.TileTypeMLT
	}
	return pmtiles.TileTypeUnknown
}

// tileAdder adds tiles to a writer under the archive's one tile
// compression: vector tiles are stored gzip-compressed when gzipVector
// (compressing those that are not), else as the first tile is; a tile that
// differs is an error, since an archive names one compression.
type tileAdder struct {
	w       *pmwrite.Writer
	gzipAll bool                // vector tiles stored gzip-compressed
	comp    pmtiles.Compression // decided by the first tile; unknown before it
	where   string
}

func (a *tileAdder) add(z uint8, x, y uint32, b []byte) error {
	if len(b) == 0 {
		return a.w.Add(z, x, y, b)
	}
	got := pmtiles.CompressionNone
	if IsGzip(b) {
		got = pmtiles.CompressionGzip
	}
	if a.gzipAll && got == pmtiles.CompressionNone {
		zb, err := gzipFile(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("upload: tile %d/%d/%d: %w", z, x, y, err)
		}
		b, got = zb, pmtiles.CompressionGzip
	}
	if a.comp == pmtiles.CompressionUnknown {
		a.comp = got
	}
	if got != a.comp {
		return badSource(nil, "%s: tile %d/%d/%d is stored with compression %v, earlier tiles with %v: a PMTiles archive has one tile compression", a.where, z, x, y, got, a.comp)
	}
	return a.w.Add(z, x, y, b)
}

// convertDatabase writes the MBTiles database at src as a PMTiles archive
// to out: TMS rows flipped, metadata rows in the archive's metadata, bounds
// and center in its header.
func convertDatabase(ctx context.Context, src string, out io.Writer, tempDir string, gzipVector bool) (pmwrite.Stats, error) {
	db, err := mbtiles.Open(ctx, src)
	if err != nil {
		return pmwrite.Stats{}, badSource(err, "%s: not a valid MBTiles database", src)
	}
	defer db.Close()
	tt := tileType(db.Format())
	if tt == pmtiles.TileTypeUnknown {
		return pmwrite.Stats{}, badSource(nil, "%s: tile format %q: a PMTiles archive holds pbf, mvt, png, jpg, webp, avif or mlt tiles", src, db.Format())
	}
	raw := map[string]json.RawMessage{}
	for k, v := range db.RawMetadata() {
		b, _ := json.Marshal(v) // a string always encodes
		raw[k] = b
	}
	return convert(src, raw, tt, out, tempDir, gzipVector, func(a *tileAdder) error {
		return db.Each(ctx, a.add)
	})
}

// convertTiles writes the tiles of a directory (items, each z/x/y.ext of
// one extension) and its metadata.json (empty when absent) as a PMTiles
// archive to out.
func convertTiles(src string, tiles []item, metadata []byte, out io.Writer, tempDir string, gzipVector bool) (pmwrite.Stats, error) {
	ext := ""
	for _, it := range tiles {
		e := strings.ToLower(it.ext)
		if e == "jpeg" {
			e = "jpg"
		}
		if ext != "" && e != ext {
			return pmwrite.Stats{}, badSource(nil, "%s: tiles of two formats (%s and %s): a PMTiles archive holds one", src, ext, e)
		}
		ext = e
	}
	raw := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(metadata)) > 0 {
		if err := json.Unmarshal(metadata, &raw); err != nil || raw == nil {
			return pmwrite.Stats{}, badSource(nil, "%s/%s: not a JSON object", src, tilename.MetadataFile)
		}
	}
	return convert(src, raw, tileType(ext), out, tempDir, gzipVector, func(a *tileAdder) error {
		for _, it := range tiles {
			z, x, y, err := parseZXY(it.rel)
			if err != nil {
				return badSource(err, "%s", src)
			}
			b, err := os.ReadFile(it.path)
			if err != nil {
				return badSource(err, "")
			}
			if err := a.add(z, x, y, b); err != nil {
				return err
			}
		}
		return nil
	})
}

func convert(src string, raw map[string]json.RawMessage, tt pmtiles.TileType, out io.Writer, tempDir string, gzipVector bool, each func(*tileAdder) error) (pmwrite.Stats, error) {
	meta, bounds, center, err := archiveMetadata(raw, src)
	if err != nil {
		return pmwrite.Stats{}, badSource(err, "")
	}
	w, err := pmwrite.New(tempDir)
	if err != nil {
		return pmwrite.Stats{}, err
	}
	defer w.Close()
	a := &tileAdder{w: w, gzipAll: tt.Vector() && gzipVector, where: src}
	if a.gzipAll {
		a.comp = pmtiles.CompressionGzip
	}
	if err := each(a); err != nil {
		return pmwrite.Stats{}, err
	}
	opts := pmwrite.Options{TileType: tt, TileCompression: a.comp, Metadata: meta, Bounds: bounds, Center: center}
	st, err := w.Finish(out, opts)
	if err != nil {
		return st, badSource(err, "%s: cannot convert to PMTiles", src)
	}
	return st, nil
}

// parseZXY reads z/x/y.ext (a path tilePath accepted).
func parseZXY(rel string) (uint8, uint32, uint32, error) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%s: not z/x/y.ext", rel)
	}
	y, _, _ := strings.Cut(parts[2], ".")
	z, errZ := strconv.ParseUint(parts[0], 10, 8)
	x, errX := strconv.ParseUint(parts[1], 10, 32)
	row, errY := strconv.ParseUint(y, 10, 32)
	if errZ != nil || errX != nil || errY != nil {
		return 0, 0, 0, fmt.Errorf("%s: not z/x/y.ext", rel)
	}
	return uint8(z), uint32(x), uint32(row), nil
}
