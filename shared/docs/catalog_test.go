package docs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// fakeArchives is a top level of TILES_PREFIX: its keys and directories,
// what each tileset object opens as, and the directories that are
// tilesets.
type fakeArchives struct {
	dirs, keys []string
	opens      map[string]error // tileset name → nil (serves) or its refusal; absent: not a tileset
	pictures   map[string]error // image id → why it is not served; absent: it is
	dirTiles   map[string]bool  // directory name → a tile pyramid
	off        string           // a format not served
	listings   atomic.Int32

	mu     sync.Mutex // guards probed
	probed []string
}

func (f *fakeArchives) TTL() time.Duration        { return time.Minute }
func (f *fakeArchives) Serves(format string) bool { return format != f.off }
func (f *fakeArchives) Tileset(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	f.probed = append(f.probed, name)
	f.mu.Unlock()
	err, ok := f.opens[name]
	return ok, err
}
func (f *fakeArchives) Picture(_ context.Context, id string) error { return f.pictures[id] }
func (f *fakeArchives) TopLevel(context.Context, int) ([]string, []string, error) {
	f.listings.Add(1)
	return f.dirs, f.keys, nil
}
func (f *fakeArchives) Exists(context.Context, string) error { return tile.ErrNotFound }
func (f *fakeArchives) IsPyramid(_ context.Context, name string) (bool, error) {
	return f.dirTiles[name], nil
}

func newCatalogDocs(t *testing.T, a Archives) *Docs {
	t.Helper()
	d, err := New(noEngine{}, Deps{
		Prepare:  func(string, *tile.Tile) {},
		Decode:   func(_ string, b []byte) ([]byte, error) { return b, nil },
		Archives: a,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCatalogTilesetsAndImages: one listing gives the tilesets and the
// images of the top level. A TIFF is a tileset only when it opens as one
// (georeferenced), else its directory may be; it is an image when it opens
// as one, ID.tif winning over ID.tiff, listed with why it is refused, left
// out when its samples are heights (a DEM: a tileset only); a refused
// archive is listed with its reason; an image's URLs are paths with its id
// escaped as one segment.
func TestCatalogTilesetsAndImages(t *testing.T) {
	t.Parallel()
	a := &fakeArchives{
		dirs: []string{"demo/", "photo/", "geo/", "empty/"},
		keys: []string{"world.pmtiles", "roads.mbtiles", "bad.pmtiles", "geo.tif", "photo.tif",
			"both.tif", "both.tiff", "scan.tiff", "a b.tif", "notes.txt", ".tif", "dem.tif", "strips.tif"},
		opens: map[string]error{"world": nil, "bad": errors.New("pmtiles: header: bad magic"), "geo": nil, "dem": nil},
		pictures: map[string]error{"dem": &formats.NotPictureError{Reason: "its samples are 32-bit float"},
			"strips": errors.New("tiff: not tiled")},
		dirTiles: map[string]bool{"demo": true, "photo": true, "geo": true},
	}
	d := newCatalogDocs(t, a)
	ts, err := d.Tilesets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []CatalogEntry{
		{Name: "bad", Kind: "pmtiles", TileJSON: "bad.json", Error: "pmtiles: header: bad magic"},
		{Name: "dem", Kind: "tiff", TileJSON: "dem.json"},
		{Name: "demo", Kind: "objects", TileJSON: "demo.json"},
		{Name: "geo", Kind: "tiff", TileJSON: "geo.json"},
		{Name: "photo", Kind: "objects", TileJSON: "photo.json"},
		{Name: "roads", Kind: "mbtiles", TileJSON: "roads.json"},
		{Name: "world", Kind: "pmtiles", TileJSON: "world.json"},
	}
	if !slices.Equal(ts, want) {
		t.Errorf("tilesets:\ngot  %+v\nwant %+v", ts, want)
	}
	images, err := d.Images(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, im := range images {
		ids = append(ids, im.ID)
	}
	if want := []string{"a b", "both", "geo", "photo", "scan", "strips"}; !slices.Equal(ids, want) {
		t.Errorf("images: got %v, want %v", ids, want)
	}
	if got := images[len(images)-1].Error; got != "tiff: not tiled" {
		t.Errorf("refused image: error %q", got)
	}
	if got, want := images[0], (ImageEntry{ID: "a b", Kind: "tiff", Info: "iiif/3/a%20b/info.json",
		Info2: "iiif/2/a%20b/info.json", Manifest: "iiif/3/a%20b/manifest.json"}); got != want {
		t.Errorf("image a b: got %+v, want %+v", got, want)
	}
	a.mu.Lock()
	probed := slices.Sorted(slices.Values(a.probed))
	a.mu.Unlock()
	// Archives read by range are opened; a database is listed unopened.
	if want := []string{"a b", "bad", "both", "dem", "geo", "photo", "scan", "strips", "world"}; !slices.Equal(probed, want) {
		t.Errorf("opened %v, want %v", probed, want)
	}
	if n := a.listings.Load(); n != 1 {
		t.Errorf("%d listings for both lists, want 1", n)
	}
}

// TestCatalogImagesOff: without the TIFF format served there are no
// images, and the list is empty, not nil (the catalog says "images": []).
func TestCatalogImagesOff(t *testing.T) {
	t.Parallel()
	d := newCatalogDocs(t, &fakeArchives{keys: []string{"photo.tif", "world.pmtiles"}, opens: map[string]error{"world": nil}, off: "tiff"})
	images, err := d.Images(context.Background())
	if err != nil || images == nil || len(images) != 0 {
		t.Errorf("got %v, %v, want an empty list", images, err)
	}
	ts, _ := d.Tilesets(context.Background())
	if len(ts) != 1 || ts[0].Name != "world" {
		t.Errorf("tilesets: got %+v, want world alone", ts)
	}
}

// TestCatalogListedOncePerPurge: a listing is kept until a purge of this
// instance, then listed afresh.
func TestCatalogListedOncePerPurge(t *testing.T) {
	t.Parallel()
	a := &fakeArchives{keys: []string{"photo.tif"}}
	d := newCatalogDocs(t, a)
	for range 3 {
		if _, err := d.Images(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	d.Purged("photo.tif")
	if _, err := d.Tilesets(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := a.listings.Load(); n != 2 {
		t.Errorf("%d listings, want 2: one, and one after the purge", n)
	}
}

// TestNoCatalog: without archives there is no catalog, of either kind.
func TestNoCatalog(t *testing.T) {
	t.Parallel()
	d := newCatalogDocs(t, nil)
	if _, err := d.Tilesets(context.Background()); !errors.Is(err, ErrNoCatalog) {
		t.Errorf("Tilesets: got %v, want ErrNoCatalog", err)
	}
	if _, err := d.Images(context.Background()); !errors.Is(err, ErrNoCatalog) {
		t.Errorf("Images: got %v, want ErrNoCatalog", err)
	}
}
