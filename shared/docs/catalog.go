package docs

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs/iiif"
	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// The catalog lists what one listing of the top level of TILES_PREFIX
// shows: the tilesets (archives, databases, directories, georeferenced
// TIFFs) and the IIIF images (ID.tif, ID.tiff). An image may be at any
// depth of key, and finding the nested ones would take a listing of every
// directory, so only those at the top level are listed.

// Archives is what the catalog lists tilesets through: the archive origin
// (*archive.Origin is one), which opens each archive as a request would.
type Archives interface {
	TTL() time.Duration        // how long a listing is believed
	Serves(format string) bool // whether objects of a format are served
	// Tileset opens the object of the tileset name as a request would:
	// found when it is one, refusal why its format refused it (its tiles
	// answer that), neither when it is none (a TIFF without
	// georeferencing is an image only) or could not be asked in time.
	Tileset(ctx context.Context, name string) (found bool, refusal error)
	// Picture opens image id as a request would: nil when it serves as
	// IIIF, else why not (tile.ErrNotFound: no such image).
	Picture(ctx context.Context, id string) error
	TopLevel(ctx context.Context, max int) (dirs, keys []string, err error)
	Exists(ctx context.Context, key string) error
	IsPyramid(ctx context.Context, name string) (bool, error)
}

// CatalogEntry is one tileset of the catalog.
type CatalogEntry struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // "pmtiles", "mbtiles", "tiff" or "objects"
	TileJSON string `json:"tilejson"`
	// Error says why an archive is refused (its tiles answer 502), as
	// the log said once when it was opened; "" when it serves.
	Error string `json:"error,omitempty"`
}

// ImageEntry is one image of the catalog: ID.tif (or ID.tiff) at the top
// level of TILES_PREFIX, served as IIIF. Its URLs are paths, escaped (the
// id is one segment, a slash in it %2F), for the caller to put under its
// base.
type ImageEntry struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // the format: "tiff"
	// Info is the IIIF Image API 3.0 info.json, Info2 the 2.1 one.
	Info  string `json:"info"`
	Info2 string `json:"info2"`
	// Manifest is the IIIF Presentation 3.0 manifest of one canvas.
	Manifest string `json:"manifest"`
	// Error says why the image is not served (its IIIF paths answer
	// that); "" when it is.
	Error string `json:"error,omitempty"`
}

// Catalog is the body of GET /_tilesieve/catalog.
type Catalog struct {
	Tilesets []CatalogEntry `json:"tilesets"`
	Images   []ImageEntry   `json:"images"`
}

// catalogMax bounds the names one listing reads, and so the HEADs of
// metadata.json objects (and the listings of directories without one) a
// catalog costs.
const catalogMax = 1000

// catalogTimeout bounds one listing when the request has no sooner
// deadline of its own.
const catalogTimeout = 20 * time.Second

// ErrNoCatalog is Tilesets' and Images' answer when archives are off.
var ErrNoCatalog = errors.New("docs: no catalog: archives are off")

// catalogHeads is how many tileset directories are looked at at once.
const catalogHeads = 8

// catalogCache keeps the last listing for the archive TTL, so a public
// endpoint costs S3 at most one listing per TTL; every purge this instance
// applies (the journal's, an admin's) drops it, so an upload is in the
// catalog as soon as the instance has seen its purge.
type catalogCache struct {
	gen   atomic.Uint64 // purges seen; a listing from before the last one is not kept
	mu    sync.Mutex    // guards at, atGen and last; held while a listing runs
	at    time.Time
	atGen uint64
	last  *listing
}

// listing is what one listing found; URLs are left as bare keys, resolved
// per request.
type listing struct {
	tilesets []CatalogEntry
	images   []ImageEntry
}

// Tilesets lists the tilesets under TILES_PREFIX: archives (NAME.pmtiles),
// databases (NAME.mbtiles), georeferenced TIFFs (NAME.tif), object
// tilesets with a NAME/metadata.json, and directories whose keys show a
// tile pyramid (NAME/{z}/{x}/{y}.{ext}). Each entry's TileJSON is its bare
// key, for the caller to put under its base. Without archives there is no
// catalog (ErrNoCatalog).
func (s *Docs) Tilesets(ctx context.Context) ([]CatalogEntry, error) {
	l, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	return l.tilesets, nil
}

// Images lists the images at the top level of TILES_PREFIX (ID.tif and
// ID.tiff, the one earlier in formats.Table for an id that has both),
// sorted by id, from the listing Tilesets makes.
func (s *Docs) Images(ctx context.Context) ([]ImageEntry, error) {
	l, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	return l.images, nil
}

// list is the last listing while the TTL holds and no purge came since,
// else a new one.
func (s *Docs) list(ctx context.Context) (*listing, error) {
	if s.archives == nil {
		return nil, ErrNoCatalog
	}
	c := &s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.gen.Load()
	if c.last != nil && c.atGen == gen && s.now().Sub(c.at) < s.archives.TTL() {
		return c.last, nil
	}
	l, err := s.listTop(ctx)
	if err != nil {
		return nil, err
	}
	c.last, c.at, c.atGen = l, s.now(), gen
	return l, nil
}

// listTop lists the top level of TILES_PREFIX afresh, in a bounded time
// and with at most catalogHeads requests at once.
func (s *Docs) listTop(ctx context.Context) (*listing, error) {
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	dirs, keys, err := s.archives.TopLevel(ctx, catalogMax)
	if err != nil {
		return nil, err
	}
	objects := s.objectTilesets(keys)
	isDir := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		isDir[strings.TrimSuffix(d, "/")] = true
	}
	// Each check writes only its own result; the results are merged once
	// every check is done.
	probes := make([]probe, len(objects))
	dirTileset := map[string]*bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, catalogHeads)
	run := func(fn func()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn()
		}()
	}
	for i, o := range objects {
		switch {
		case o.ranged:
			// Opened as a request would open it (the same probe, kept for
			// requests), so a malformed archive shows here with its reason.
			run(func() { probes[i].found, probes[i].refusal = s.archives.Tileset(ctx, o.entry.Name) })
		default:
			probes[i].found = true
		}
	}
	taken := make(map[string]bool, len(objects))
	for _, o := range objects {
		// An image's object may be no tileset: then its directory may be.
		taken[o.entry.Name] = !o.imageFormat
	}
	for name := range isDir {
		if taken[name] {
			continue
		}
		found := new(bool)
		dirTileset[name] = found
		run(func() { *found = s.isDirTileset(ctx, name) })
	}
	images := s.topImages(keys)
	imageErrs := make([]error, len(images))
	for i, im := range images {
		run(func() { imageErrs[i] = s.archives.Picture(ctx, im.ID) })
	}
	wg.Wait()
	return &listing{tilesets: tilesetEntries(objects, probes, dirTileset), images: servedImages(images, imageErrs)}, nil
}

// probe is what opening a top-level object as a tileset found.
type probe struct {
	found   bool
	refusal error
}

// tilesetEntries merges the checks of listTop, in name order: each object
// that is a tileset (or refused as one, with its reason), and each
// directory found to be one under a name no object took.
func tilesetEntries(objects []objectTileset, probes []probe, dirTileset map[string]*bool) []CatalogEntry {
	byName := map[string]CatalogEntry{}
	for i, o := range objects {
		e := o.entry
		switch p := probes[i]; {
		case p.refusal != nil:
			e.Error = p.refusal.Error()
		case !p.found && o.imageFormat:
			continue // an image only, or not asked in time
		}
		byName[e.Name] = e
	}
	for name, found := range dirTileset {
		if _, ok := byName[name]; !ok && *found {
			byName[name] = CatalogEntry{Name: name, Kind: "objects", TileJSON: tilename.TileJSONKey(name)}
		}
	}
	names := make([]CatalogEntry, 0, len(byName))
	for _, e := range byName {
		names = append(names, e)
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name < names[j].Name })
	return names
}

// objectTileset is a tileset stored as one object among the top-level
// keys.
type objectTileset struct {
	entry CatalogEntry
	// ranged marks a format read by range, which the catalog opens;
	// imageFormat one whose objects are images, tilesets only when they
	// open as one (a georeferenced TIFF).
	ranged, imageFormat bool
}

// objectTilesets are the tilesets stored as one object among the top-level
// keys, the format earlier in formats.Table winning a name.
func (s *Docs) objectTilesets(keys []string) []objectTileset {
	var out []objectTileset
	seen := map[string]bool{}
	for _, spec := range formats.Table { // in order of precedence
		if !spec.Tiles || !s.archives.Serves(spec.Name) {
			continue
		}
		for _, key := range keys {
			name, ok := strings.CutSuffix(key, spec.Ext)
			if !ok || name == "" || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, objectTileset{
				entry:  CatalogEntry{Name: name, Kind: spec.Name, TileJSON: tilename.TileJSONKey(name)},
				ranged: spec.Staging == formats.Ranged, imageFormat: spec.Image,
			})
		}
	}
	return out
}

// topImages are the images among the top-level keys, the format earlier
// in formats.Table winning an id, sorted by id.
func (s *Docs) topImages(keys []string) []ImageEntry {
	images := []ImageEntry{}
	seen := map[string]bool{}
	for _, spec := range formats.Table {
		if !spec.Image || !s.archives.Serves(spec.Name) {
			continue
		}
		for _, key := range keys {
			id, ok := strings.CutSuffix(key, spec.Ext)
			if !ok || id == "" || seen[id] {
				continue
			}
			seen[id] = true
			v3, v2 := tilename.IIIFDir("3", id), tilename.IIIFDir("2", id)
			images = append(images, ImageEntry{ID: id, Kind: spec.Name,
				Info: v3 + iiif.InfoName, Info2: v2 + iiif.InfoName, Manifest: v3 + "manifest.json"})
		}
	}
	sort.Slice(images, func(i, j int) bool { return images[i].ID < images[j].ID })
	return images
}

// servedImages are the images whose opening (errs, in their order) found
// them, with why one is not served: a TIFF whose samples are heights is a
// tileset's, not an image, and is left out; one the request could not open
// in time is listed.
func servedImages(images []ImageEntry, errs []error) []ImageEntry {
	out := images[:0]
	for i, im := range images {
		var np *formats.NotPictureError
		switch err := errs[i]; {
		case err == nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		case errors.Is(err, tile.ErrNotFound), errors.As(err, &np):
			continue
		default:
			im.Error = err.Error()
		}
		out = append(out, im)
	}
	return out
}

// isDirTileset reports whether the directory name/ is a tileset: it has a
// metadata.json, or its keys show a tile pyramid.
func (s *Docs) isDirTileset(ctx context.Context, name string) bool {
	if s.archives.Exists(ctx, tilename.MetadataKey(name)) == nil {
		return true
	}
	found, err := s.archives.IsPyramid(ctx, name)
	if err != nil {
		s.log.Warn("catalog: directory not listed", "name", name, "err", err)
	}
	return found
}
