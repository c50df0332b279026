// Package sources is the map from tilesets to the buckets and prefixes
// they are read from (the SOURCES setting): a tile key NAME/… of a source
// named NAME lives in that source's bucket, every other key in the default
// bucket under TILES_PREFIX. The tile function's origin routes reads by it
// (Lookup), and the sync worker maps S3 changes back to tile keys by it
// (TileKeys), so a read and the purge of what it read name the same key.
//
// A source is either a directory, s3://BUCKET/PREFIX with PREFIX empty or
// ending in /, whose objects are the tileset's files (PREFIX + "3/4/5.pbf"
// is the tile key NAME/3/4/5.pbf), or one archive, s3://BUCKET/KEY.pmtiles
// or .mbtiles, which is the tile key NAME.pmtiles (or NAME.mbtiles).
//
// The package parses nothing: shared/config reads and validates SOURCES.
// A Table is immutable and safe for concurrent use.
package sources

import (
	"strings"

	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// Source is one entry of SOURCES.
type Source struct {
	Name   string // the tileset's name, the first segment of its tile keys
	Bucket string
	// Prefix is the directory of the tileset's files ("" or ending in /),
	// or, for an archive source, the archive's object key (ending in
	// .pmtiles or .mbtiles).
	Prefix string
	// RequesterPays sends x-amz-request-payer: requester on every read of
	// the bucket (a requester-pays bucket refuses reads without it).
	RequesterPays bool
}

// ArchiveExt is the extension of an archive source's key (.pmtiles or
// .mbtiles), or "" for a directory source.
func (s Source) ArchiveExt() string {
	for _, ext := range tilename.SingleFileExts {
		if strings.HasSuffix(s.Prefix, ext) {
			return ext
		}
	}
	return ""
}

// String is the source as SOURCES spells it.
func (s Source) String() string {
	v := s.Name + "=s3://" + s.Bucket + "/" + s.Prefix
	if s.RequesterPays {
		v += "?requester-pays"
	}
	return v
}

// Default is where every tileset without a source of its own is read from:
// TILES_BUCKET and TILES_PREFIX.
type Default struct {
	Bucket string
	Prefix string
}

// Table routes tile keys to sources.
type Table struct {
	def    Default
	list   []Source
	byName map[string]Source
}

// New builds the table of def and list. It trusts list to be valid
// (config.LoadTiles and config.LoadWorker validate SOURCES): of two
// sources with one name, the last counts.
func New(def Default, list []Source) *Table {
	t := &Table{def: def, list: append([]Source(nil), list...), byName: make(map[string]Source, len(list))}
	for _, s := range list {
		t.byName[s.Name] = s
	}
	return t
}

// Default returns the default source.
func (t *Table) Default() Default { return t.def }

// List returns the sources in the order SOURCES names them.
func (t *Table) List() []Source { return append([]Source(nil), t.list...) }

// topLevelExts end the top-level keys of a tileset NAME: its TileJSON and
// its single-file forms.
var topLevelExts = append([]string{tilename.TileJSONExt}, tilename.SingleFileExts...)

// Name returns the tileset a tile key belongs to: the first segment of
// NAME/…, or NAME of a top-level NAME.pmtiles, NAME.mbtiles or NAME.json.
func Name(key string) string {
	if name, _, ok := strings.Cut(key, "/"); ok {
		return name
	}
	for _, ext := range topLevelExts {
		if name, ok := strings.CutSuffix(key, ext); ok && name != "" {
			return name
		}
	}
	return key
}

// Lookup returns the source a tile key is read from: routed is false for a
// key of the default source. For a routed key, objectKey is its S3 key in
// src.Bucket, and exists is false when the source has no object for the
// key at all (an archive source has no NAME/… objects, a directory source
// no NAME.pmtiles), so that no S3 request is needed to know it is missing.
func (t *Table) Lookup(key string) (src Source, objectKey string, routed, exists bool) {
	src, routed = t.byName[Name(key)]
	if !routed {
		return Source{}, "", false, false
	}
	// key begins with src.Name: NAME/… or NAME.ext.
	rest, inDir := "", len(key) > len(src.Name) && key[len(src.Name)] == '/'
	if inDir {
		rest = key[len(src.Name)+1:]
	}
	if ext := src.ArchiveExt(); ext != "" {
		if key[len(src.Name):] == ext {
			return src, src.Prefix, true, true
		}
		return src, "", true, false
	}
	if !inDir || rest == "" {
		return src, "", true, false
	}
	return src, src.Prefix + rest, true, true
}

// Journal is where the purge journal lives (TILES_BUCKET and
// JOURNAL_PREFIX): changes there are the worker's own writes, never tiles.
type Journal struct {
	Bucket string
	Prefix string
}

// TileKeys maps a changed object to the tile keys it is read as: under the
// default source (TILES_PREFIX, unless a source of the same name shadows
// the tileset) and under every source whose bucket and prefix hold it
// (sources may overlap). It returns nil for an object no tileset reads,
// among them every key of the journal.
func (t *Table) TileKeys(bucket, objectKey string, j Journal) []string {
	if bucket == j.Bucket && j.Prefix != "" && strings.HasPrefix(objectKey, j.Prefix) {
		return nil
	}
	var keys []string
	if bucket == t.def.Bucket {
		if k, ok := tile.KeyFromObject(t.def.Prefix, objectKey); ok {
			if _, shadowed := t.byName[Name(k)]; !shadowed {
				keys = append(keys, k)
			}
		}
	}
	for _, s := range t.list {
		if s.Bucket != bucket || t.byName[s.Name] != s {
			continue
		}
		if ext := s.ArchiveExt(); ext != "" {
			if objectKey == s.Prefix {
				keys = append(keys, s.Name+ext)
			}
			continue
		}
		if rest, ok := tile.KeyFromObject(s.Prefix, objectKey); ok {
			keys = append(keys, s.Name+"/"+rest)
		}
	}
	return keys
}

// Buckets returns every bucket tiles are read from, the default first,
// each once.
func (t *Table) Buckets() []string {
	out := []string{t.def.Bucket}
	for _, s := range t.list {
		dup := false
		for _, b := range out {
			dup = dup || b == s.Bucket
		}
		if !dup {
			out = append(out, s.Bucket)
		}
	}
	return out
}
