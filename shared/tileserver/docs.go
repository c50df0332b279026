package tileserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/iiif"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/pmtiles"
	"github.com/tilesieve/tilesieve/shared/style"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
	"github.com/tilesieve/tilesieve/shared/tileset"
)

// Answers that name the URL they are served from: TileJSON (its tile URLs),
// MapLibre styles NAME/style.json (the URLs style.Rewrite sets) and IIIF
// info.json (its image id). The tiers hold them as the origin gave
// them, independent of any base URL, so purges, revalidation and staleness
// work as for tiles; each answer is rendered for its base URL, and the
// rendering is kept in a small SIEVE of its own (docs) under the key, the
// base and the source's ETag. One base per instance is typical (PUBLIC_URL,
// or the one CDN host), so a document is rendered once per version, and a
// request with another Host costs a render, never a wrong answer.

// docsBytes bounds the rendered documents kept.
const docsBytes = 4 << 20

// withArchives wires the archive origin and the document cache (New).
func (s *Server) withArchives(d Deps) error {
	var err error
	if s.docs, err = cache.New(cache.Config{MaxBytes: docsBytes}); err != nil {
		return err
	}
	if d.Archives == nil {
		return nil
	}
	dirs := d.Directories
	if dirs == nil {
		if dirs, err = cache.New(cache.Config{MaxBytes: DefaultDirectoryBytes}); err != nil {
			return err
		}
	}
	s.archives = newArchives(s, s.origin, d.Archives, dirs, s.cfg.ArchiveTTL)
	s.archives.stager = d.Stager
	s.origin = s.archives
	return nil
}

// purged runs inside every purge of prefix on this instance: archives it
// covers are opened afresh, and renderings of what it covers are dropped.
func (s *Server) purged(prefix string) {
	s.catalog.gen.Add(1)
	s.docs.DeletePrefix(prefix)
	if s.archives != nil {
		s.archives.forget(prefix)
	}
}

// documentKind reports whether t at key is a TileJSON this server wrote
// for an archive (NAME.json), or another document that names the URL it is
// served from: a style (NAME/style.json) or a IIIF info.json.
func documentKind(key string, t *tile.Tile) (tileJSON, named bool) {
	tileJSON = !strings.Contains(key, "/") && strings.HasSuffix(t.ETag, tileJSONTag+`"`)
	_, isStyle := style.NameFromKey(key)
	named = isStyle || strings.HasSuffix(key, "/"+iiif.InfoName)
	return tileJSON, named
}

// document returns t as answered for req: a TileJSON built from an archive
// or a metadata.json with tile URLs under the request's base URL, a style
// with the URLs that are ours under it, an info.json with its image id
// under it; any other tile as it is.
func (s *Server) document(req *Request, key string, t *tile.Tile) *tile.Tile {
	isTileJSON, named := documentKind(key, t)
	if !isTileJSON && !named {
		return t
	}
	base := s.baseURL(req)
	memo := key + "\x00" + base + "\x00" + t.ETag
	if r, ok := s.docs.Get(memo); ok {
		return r
	}
	body := t.Body
	if decodable(t.ContentEncoding) {
		var err error
		if body, err = decodeTile(t.ContentEncoding, body); err != nil {
			return t
		}
	}
	var out []byte
	var err error
	if name, isStyle := style.NameFromKey(key); isStyle {
		out, err = style.Rewrite(body, base, name)
	} else if isTileJSON {
		out, err = renderTileJSON(body, base, strings.TrimSuffix(key, ".json"))
	} else {
		var id string
		if id, err = iiif.ImageID(base, key); err == nil {
			out, err = iiif.RewriteID(body, id)
		}
	}
	if err != nil {
		// Not a document this server can render: served as stored.
		s.log.Debug("document served as stored", "key", key, "err", err)
		return t
	}
	r := &tile.Tile{
		Body:         out,
		ContentType:  "application/json",
		ETag:         baseTag(t.ETag, base),
		LastModified: t.LastModified,
		StoredAt:     t.StoredAt,
	}
	s.prepare(key, r)
	s.docs.Set(memo, r)
	return r
}

// renderTileJSON sets a stored TileJSON's tile URLs under base.
func renderTileJSON(stored []byte, base, name string) ([]byte, error) {
	var tj tileset.TileJSON
	if err := json.Unmarshal(stored, &tj); err != nil {
		return nil, err
	}
	u, err := tileset.TileURL(base, name, tj.Format)
	if err != nil {
		return nil, err
	}
	tj.Tiles = []string{u}
	return tj.Marshal(), nil
}

// baseTag is the ETag of a document rendered for base: another base is
// another representation.
func baseTag(etag, base string) string {
	if etag == "" {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(base))
	return derivedTag(etag, "~"+strconv.FormatUint(uint64(h.Sum32()), 36))
}

// CDNSecretHeader carries Config.CDNSecret on the requests the CDN sends to
// the origin (a CloudFront origin custom header, which replaces any value a
// viewer sent under that name).
const CDNSecretHeader = "X-Tilesieve-Cdn"

// baseURL is the public base URL of req: PUBLIC_URL, else the CDN's
// forwarded host when req came through the CDN, else the host the request
// came to. A forwarded host from anyone else is ignored: whoever could
// choose it could put their own URLs into documents.
func (s *Server) baseURL(req *Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimSuffix(s.cfg.PublicURL, "/")
	}
	proto, host := "", ""
	if s.fromCDN(req) {
		// Viewers reach the CDN over https only (the distribution redirects
		// http), and CloudFront forwards a viewer-sent X-Forwarded-Proto as
		// it came, outside the cache key: believing it would let one viewer
		// cache http:// URLs (blocked as mixed content) for everyone.
		host = firstListValue(req.get(HdrXForwardedHost))
	}
	if validHost(host) {
		proto = "https"
	} else {
		host = req.get(HdrHost)
	}
	if !validHost(host) {
		host = "localhost"
	}
	if proto != "https" {
		proto = "http"
	}
	return proto + "://" + host
}

// fromCDN reports whether req carries the CDN's secret. Without one set,
// no request is trusted.
func (s *Server) fromCDN(req *Request) bool {
	if s.cfg.CDNSecret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(req.get(HdrCDNSecret)), []byte(s.cfg.CDNSecret)) == 1
}

func firstListValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.ToLower(strings.TrimSpace(first))
}

// validHost accepts a host[:port] of letters, digits, dots, hyphens and a
// bracketed IPv6 literal: nothing that could reshape a URL.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range []byte(h) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// CatalogEntry is one tileset of the catalog.
type CatalogEntry struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // "pmtiles", "mbtiles" or "objects"
	TileJSON string `json:"tilejson"`
	// Error says why an archive is refused (its tiles answer 502), as
	// the log said once when it was opened; "" when it serves.
	Error string `json:"error,omitempty"`
}

// Catalog is the body of GET /_tilesieve/catalog.
type Catalog struct {
	Tilesets []CatalogEntry `json:"tilesets"`
}

// catalogMax bounds the names one listing reads, and so the HEADs of
// metadata.json objects (and the listings of directories without one) a
// catalog costs.
const catalogMax = 1000

// catalogHeads is how many tileset directories are looked at at once.
const catalogHeads = 8

// catalogCache keeps the names of the last listing for the archive TTL, so
// a public endpoint costs S3 at most one listing per TTL; every purge this
// instance applies (the journal's, an admin's) drops it, so an upload is in
// the catalog as soon as the instance has seen its purge.
type catalogCache struct {
	gen   atomic.Uint64 // purges seen; a listing from before the last one is not kept
	mu    sync.Mutex    // guards at, atGen and names; held while a listing runs
	at    time.Time
	atGen uint64
	names []CatalogEntry // TileJSON left as the bare key, resolved per request
}

// serveCatalog lists the tilesets under TILES_PREFIX: archives (NAME.pmtiles),
// object tilesets with a NAME/metadata.json, and directories whose keys
// show a tile pyramid (NAME/{z}/{x}/{y}.{ext}).
func (s *Server) serveCatalog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.notAllowed(w, "GET, HEAD")
		return
	}
	if s.archives == nil {
		s.plain(w, http.StatusNotFound, "no catalog: archives are off")
		return
	}
	entries, err := s.catalogEntries(r.Context())
	if err != nil {
		s.log.Warn("catalog not listed", "err", err)
		s.plain(w, http.StatusBadGateway, "catalog: origin error")
		return
	}
	var req Request
	HTTPRequest(r, &req)
	base := s.baseURL(&req)
	out := Catalog{Tilesets: make([]CatalogEntry, 0, len(entries))}
	for _, e := range entries {
		e.TileJSON = base + "/" + url.PathEscape(e.TileJSON)
		out.Tilesets = append(out.Tilesets, e)
	}
	if s.cors.any {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(b.Bytes())
	}
}

func (s *Server) catalogEntries(ctx context.Context) ([]CatalogEntry, error) {
	c := &s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.gen.Load()
	if c.names != nil && c.atGen == gen && s.now().Sub(c.at) < s.archives.ttl {
		return c.names, nil
	}
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	dirs, objects, err := s.archives.store.Prefixes(ctx, "", catalogMax)
	if err != nil {
		return nil, err
	}
	byName := map[string]CatalogEntry{}
	for _, o := range objects {
		if name, ok := strings.CutSuffix(o.Key, ArchiveExt); ok && name != "" {
			byName[name] = CatalogEntry{Name: name, Kind: "pmtiles", TileJSON: tilename.TileJSONKey(name)}
		}
	}
	for _, o := range objects {
		// A database is a tileset unless an archive of its name is served.
		if name, ok := strings.CutSuffix(o.Key, MBTilesExt); ok && name != "" && s.archives.stager != nil && byName[name].Name == "" {
			byName[name] = CatalogEntry{Name: name, Kind: "mbtiles", TileJSON: name + ".json"}
		}
	}
	var mu sync.Mutex // guards byName below
	var wg sync.WaitGroup
	sem := make(chan struct{}, catalogHeads)
	var archives []string
	for name, e := range byName {
		if e.Kind == "pmtiles" {
			archives = append(archives, name)
		}
	}
	for _, name := range archives {
		// Opened as a request would open it (the same probe, kept for
		// requests), so a malformed archive shows here with its reason.
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.archives.refusal(ctx, name); err != nil {
				mu.Lock()
				e := byName[name]
				e.Error = err.Error()
				byName[name] = e
				mu.Unlock()
			}
		}()
	}
	for _, d := range dirs {
		name := strings.TrimSuffix(d, "/")
		mu.Lock()
		_, ok := byName[name]
		mu.Unlock()
		if ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := s.archives.store.Head(ctx, tilename.MetadataKey(name))
			if err != nil {
				// No metadata.json: a tileset when its keys show one.
				_, found, lerr := s.archives.listPyramid(ctx, name)
				if lerr != nil {
					s.log.Warn("catalog: directory not listed", "name", name, "err", lerr)
				}
				if !found {
					return
				}
			}
			mu.Lock()
			byName[name] = CatalogEntry{Name: name, Kind: "objects", TileJSON: tilename.TileJSONKey(name)}
			mu.Unlock()
		}()
	}
	wg.Wait()
	names := make([]CatalogEntry, 0, len(byName))
	for _, e := range byName {
		names = append(names, e)
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name < names[j].Name })
	c.names, c.at, c.atGen = names, s.now(), gen
	return names, nil
}

// pyramid is what the keys of a directory tileset without a metadata.json
// show: the format of its tiles and its zoom levels.
type pyramid struct {
	format           string
	minZoom, maxZoom int
}

// listPyramid reads the shape of the tileset name/ from its keys, in at
// most three bounded listings: its zoom directories, the first column of
// its lowest zoom, and that column's tiles. found is false when the keys
// show no NAME/{z}/{x}/{y}.{ext} of a tile format.
func (a *archives) listPyramid(ctx context.Context, name string) (p pyramid, found bool, err error) {
	dirs, _, err := a.store.Prefixes(ctx, name+"/", catalogMax)
	if err != nil {
		return p, false, fmt.Errorf("tileserver: list %s/: %w", name, err)
	}
	p.minZoom = -1
	for _, d := range dirs {
		z, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(d, name+"/"), "/"))
		if err != nil || z < 0 || z > pmtiles.MaxZoom {
			continue
		}
		if p.minZoom < 0 || z < p.minZoom {
			p.minZoom = z
		}
		p.maxZoom = max(p.maxZoom, z)
	}
	if p.minZoom < 0 {
		return p, false, nil
	}
	zdir := name + "/" + strconv.Itoa(p.minZoom) + "/"
	cols, _, err := a.store.Prefixes(ctx, zdir, catalogMax)
	if err != nil {
		return p, false, fmt.Errorf("tileserver: list %s: %w", zdir, err)
	}
	for _, col := range cols {
		if _, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(col, zdir), "/"), 10, 32); err != nil {
			continue
		}
		_, objects, err := a.store.Prefixes(ctx, col, catalogMax)
		if err != nil {
			return p, false, fmt.Errorf("tileserver: list %s: %w", col, err)
		}
		for _, o := range objects {
			y, ext, ok := strings.Cut(strings.TrimPrefix(o.Key, col), ".")
			if _, err := strconv.ParseUint(y, 10, 32); err != nil || !ok {
				continue
			}
			switch ext = strings.ToLower(ext); ext {
			case "jpeg":
				ext = "jpg"
			case "pbf", "mvt", "mlt", "png", "jpg", "webp", "avif":
			default:
				continue
			}
			p.format = ext
			return p, true, nil
		}
		break // the first column stands for the tileset
	}
	return p, false, nil
}

// listedTileJSON is the TileJSON of a directory tileset without a
// metadata.json or a NAME.json object, from what its keys show
// (listPyramid). Its ETag names that shape, so a revalidation lists again
// and answers 304 while the shape holds; a new zoom level shows within
// the revalidation bound, a new metadata.json at once (its purge derives
// NAME.json).
func (a *archives) listedTileJSON(ctx context.Context, name, ifNoneMatch string) (*tile.Tile, error) {
	p, found, err := a.listPyramid(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("tileserver: %s.json: no metadata.json and no tiles: %w", name, origin.ErrNotFound)
	}
	etag := derivedTag(`"keys-`+p.format+"-"+strconv.Itoa(p.minZoom)+"-"+strconv.Itoa(p.maxZoom)+`"`, tileJSONTag)
	if ifNoneMatch == etag {
		return nil, origin.ErrNotModified
	}
	md, _ := json.Marshal(map[string]any{"format": p.format, "minzoom": p.minZoom, "maxzoom": p.maxZoom})
	tj, err := tileset.FromMetadata(placeholderBase, name, md)
	if err != nil {
		return nil, err
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: etag}, nil
}
