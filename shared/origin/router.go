package origin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Router is the origin of a deploy with many sources (SOURCES): it reads
// each tile key from the bucket and prefix its tileset's source names
// (sources.Table.Lookup) and every other key through the default Client
// (TILES_BUCKET under TILES_PREFIX). It offers what the tier engine and the
// archive and catalog code read through (Get, Head, GetRange, Prefixes,
// ObjectKey), so they serve every source as one key space without knowing
// that there are several.
//
// Its object keys are tile keys: ObjectKey returns its argument, and
// GetRange routes it as Get does. A key of a source that can have no object
// (NAME/… of an archive source, NAME.pmtiles of a directory) is tile.ErrNotFound
// without an S3 request.
//
// A Router is safe for concurrent use.
type Router struct {
	def   *Client
	table *sources.Table
	by    map[string]*Client // each source's client, by tileset name
}

// NewRouter routes the sources of table over def. Each source's reads go
// through def's S3 client and its retry, deadline and size rules, with the
// source's bucket and requester-pays setting.
func NewRouter(def *Client, table *sources.Table) *Router {
	r := &Router{def: def, table: table, by: map[string]*Client{}}
	for _, s := range table.List() {
		cfg := def.cfg
		cfg.Bucket, cfg.Prefix, cfg.RequesterPays = s.Bucket, "", s.RequesterPays
		r.by[s.Name] = &Client{api: def.api, bulk: def.bulk, cfg: cfg, listPageSize: def.listPageSize}
	}
	return r
}

// Default returns the client of the default source.
func (r *Router) Default() *Client { return r.def }

// Locate returns the client and object key a tile key is read from
// (ObjectKey of the default client for an unrouted key); ok is false when
// the key's source has no object for it. Staging copies a source's
// archive through it.
func (r *Router) Locate(key string) (c *Client, objectKey string, ok bool) {
	src, obj, routed, exists := r.table.Lookup(key)
	if !routed {
		return r.def, r.def.ObjectKey(key), true
	}
	return r.by[src.Name], obj, exists
}

func (r *Router) notFound(op, key string) error {
	return fmt.Errorf("origin: %s %q: its source %s has no such object: %w", op, key, sources.Name(key), tile.ErrNotFound)
}

// Get reads a whole tile from its source (Client.Get).
func (r *Router) Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	src, obj, routed, exists := r.table.Lookup(key)
	if !routed {
		return r.def.Get(ctx, key, ifNoneMatch)
	}
	if err := tile.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("origin: get: %w", err)
	}
	if !exists {
		return nil, r.notFound("get", key)
	}
	return r.by[src.Name].get(ctx, "get", key, obj, ifNoneMatch)
}

// Head reads a tile's metadata from its source (Client.Head).
func (r *Router) Head(ctx context.Context, key string) (*tile.Tile, error) {
	src, obj, routed, exists := r.table.Lookup(key)
	if !routed {
		return r.def.Head(ctx, key)
	}
	if err := tile.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("origin: head: %w", err)
	}
	if !exists {
		return nil, r.notFound("head", key)
	}
	return r.by[src.Name].head(ctx, key, obj)
}

// ObjectKey returns key: the Router's object keys are tile keys (GetRange
// routes them).
func (r *Router) ObjectKey(key string) string { return key }

// GetRange reads a byte range of the object the tile key names
// (Client.GetRange), pinned to ifMatch when set.
func (r *Router) GetRange(ctx context.Context, key string, off, n int64, ifMatch string) (*Range, error) {
	src, obj, routed, exists := r.table.Lookup(key)
	if !routed {
		return r.def.GetRange(ctx, r.def.ObjectKey(key), off, n, ifMatch)
	}
	if !exists {
		return nil, r.notFound("get range", key)
	}
	return r.by[src.Name].GetRange(ctx, obj, off, n, ifMatch)
}

// MaxObjectBytes is the default client's (one MAX_TILE_BYTES for all).
func (r *Router) MaxObjectBytes() int64 { return r.def.MaxObjectBytes() }

// Prefixes lists one level of the key space under dir (Client.Prefixes):
// inside a tileset, its source's listing; at the top, the default source's
// names that no source shadows, and the sources' own (NAME/ for a
// directory, NAME.pmtiles or NAME.mbtiles for an archive that exists).
func (r *Router) Prefixes(ctx context.Context, dir string, max int) ([]string, []ObjectInfo, error) {
	if err := tile.ValidatePrefix(dir); err != nil {
		return nil, nil, fmt.Errorf("origin: prefixes: %w", err)
	}
	if name, rest, inside := strings.Cut(dir, "/"); inside {
		src, obj, routed, exists := r.table.Lookup(dir)
		if !routed {
			return r.def.Prefixes(ctx, dir, max)
		}
		if !exists && rest != "" || src.ArchiveExt() != "" {
			return nil, nil, nil
		}
		if rest == "" {
			obj = src.Prefix
		}
		dirs, objects, err := r.by[name].level(ctx, dir, obj, src.Prefix, max)
		for i := range dirs {
			dirs[i] = name + "/" + dirs[i]
		}
		for i := range objects {
			objects[i].Key = name + "/" + objects[i].Key
		}
		return dirs, objects, err
	}
	dirs, objects, err := r.def.Prefixes(ctx, dir, max)
	if err != nil {
		return nil, nil, err
	}
	shadowed := func(key string) bool {
		_, _, routed, _ := r.table.Lookup(key)
		return routed
	}
	dirs = slices.DeleteFunc(dirs, shadowed)
	objects = slices.DeleteFunc(objects, func(o ObjectInfo) bool { return shadowed(o.Key) })
	for _, s := range r.table.List() {
		if !strings.HasPrefix(s.Name, dir) || len(dirs)+len(objects) >= max {
			continue
		}
		ext := s.ArchiveExt()
		if ext == "" {
			dirs = append(dirs, s.Name+"/")
			continue
		}
		t, err := r.by[s.Name].head(ctx, s.Name+ext, s.Prefix)
		switch {
		case err == nil:
			objects = append(objects, ObjectInfo{Key: s.Name + ext, ETag: t.ETag})
		case !isNotFound(err):
			return nil, nil, err
		}
	}
	return dirs, objects, nil
}

func isNotFound(err error) bool { return errors.Is(err, tile.ErrNotFound) }
