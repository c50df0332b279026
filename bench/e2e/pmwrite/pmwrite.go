// Package pmwrite packs XYZ tiles into a PMTiles v3 archive with go-pmtiles'
// own header and directory serialisation, so `pmtiles serve` can serve the
// very bytes the other servers of the benchmark serve.
package pmwrite

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/protomaps/go-pmtiles/pmtiles"
)

// Tile is one tile of the archive.
type Tile struct {
	Z    uint8
	X, Y uint32
	Body []byte
}

// Write writes an archive of tiles of type tt (stored uncompressed) to w.
// Layout: header, root directory, metadata, leaf directories, tile data in
// tile-id order (a clustered archive). Tiles sharing one Body slice (the
// same backing array and length) are stored once, as deduplicating writers
// store repeated tiles: their entries point at the same bytes.
func Write(w io.Writer, tiles []Tile, tt pmtiles.TileType, name string) error {
	if len(tiles) == 0 {
		return fmt.Errorf("pmwrite: no tiles")
	}
	type idTile struct {
		id uint64
		t  *Tile
	}
	ids := make([]idTile, len(tiles))
	minZ, maxZ := uint8(255), uint8(0)
	for i := range tiles {
		t := &tiles[i]
		ids[i] = idTile{pmtiles.ZxyToID(t.Z, t.X, t.Y), t}
		minZ, maxZ = min(minZ, t.Z), max(maxZ, t.Z)
	}
	slices.SortFunc(ids, func(a, b idTile) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	entries := make([]pmtiles.EntryV3, len(ids))
	var off uint64
	type body struct {
		p *byte
		n int
	}
	stored := map[body]uint64{} // offset of each Body written
	var unique []*Tile
	for i, it := range ids {
		if i > 0 && ids[i-1].id == it.id {
			return fmt.Errorf("pmwrite: tile %d/%d/%d twice", it.t.Z, it.t.X, it.t.Y)
		}
		at := off
		if len(it.t.Body) > 0 {
			k := body{&it.t.Body[0], len(it.t.Body)}
			if o, ok := stored[k]; ok {
				at = o
			} else {
				stored[k] = off
				unique = append(unique, it.t)
				off += uint64(len(it.t.Body))
			}
		}
		entries[i] = pmtiles.EntryV3{TileID: it.id, Offset: at, Length: uint32(len(it.t.Body)), RunLength: 1}
	}
	root, leaves, _ := pmtiles.BuildDirectories(entries, 16384-pmtiles.HeaderV3LenBytes, pmtiles.Gzip)
	meta, err := pmtiles.SerializeMetadata(map[string]any{"name": name, "format": "jpg"}, pmtiles.Gzip)
	if err != nil {
		return fmt.Errorf("pmwrite: metadata: %w", err)
	}
	h := pmtiles.HeaderV3{
		SpecVersion:         3,
		RootOffset:          pmtiles.HeaderV3LenBytes,
		RootLength:          uint64(len(root)),
		InternalCompression: pmtiles.Gzip,
		TileCompression:     pmtiles.NoCompression,
		TileType:            tt,
		Clustered:           true,
		AddressedTilesCount: uint64(len(entries)),
		TileEntriesCount:    uint64(len(entries)),
		TileContentsCount:   uint64(len(unique)),
		MinZoom:             minZ,
		MaxZoom:             maxZ,
		MinLonE7:            -1800000000,
		MinLatE7:            -850511287,
		MaxLonE7:            1800000000,
		MaxLatE7:            850511287,
		CenterZoom:          minZ,
	}
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.MetadataLength = uint64(len(meta))
	h.LeafDirectoryOffset = h.MetadataOffset + h.MetadataLength
	h.LeafDirectoryLength = uint64(len(leaves))
	h.TileDataOffset = h.LeafDirectoryOffset + h.LeafDirectoryLength
	h.TileDataLength = off
	for _, b := range [][]byte{pmtiles.SerializeHeader(h), root, meta, leaves} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	for _, t := range unique {
		if _, err := w.Write(t.Body); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes the archive Write writes to a new file at path. When
// Write fails, the partial file is removed.
func WriteFile(path string, tiles []Tile, tt pmtiles.TileType, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("pmwrite: %w", err)
	}
	if err := Write(f, tiles, tt, name); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pmwrite: %w", err)
	}
	return nil
}
