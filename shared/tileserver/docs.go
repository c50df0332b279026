package tileserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/archive"
	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/iiif"
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
	s.archives, err = archive.New(archive.Config{TTL: s.cfg.ArchiveTTL, OriginTimeout: s.cfg.OriginTimeout, Now: s.now}, archive.Deps{
		Next: s.origin, Store: d.Archives, Stager: d.Stager, Directories: d.Directories,
		Decode: decodeStored, Logger: s.log,
		// The engine is built next, with s.origin; an archive changes under a
		// read only once requests run.
		Purge: func(prefix string) { _, _ = s.eng.Purge(prefix) },
	})
	if err != nil {
		return err
	}
	s.origin = s.archives
	return nil
}

// purged runs inside every purge of prefix on this instance: archives it
// covers are opened afresh, and renderings of what it covers are dropped.
func (s *Server) purged(prefix string) {
	s.catalog.gen.Add(1)
	s.docs.DeletePrefix(prefix)
	if s.archives != nil {
		s.archives.Forget(prefix)
	}
}

// documentKind reports whether t at key is a TileJSON this server wrote
// for an archive (NAME.json), or another document that names the URL it is
// served from: a style (NAME/style.json) or a IIIF info.json.
func documentKind(key string, t *tile.Tile) (tileJSON, named bool) {
	tileJSON = !strings.Contains(key, "/") && strings.HasSuffix(t.ETag, archive.TileJSONTag+`"`)
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
	return archive.DerivedTag(etag, "~"+strconv.FormatUint(uint64(h.Sum32()), 36))
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
	if c.names != nil && c.atGen == gen && s.now().Sub(c.at) < s.archives.TTL() {
		return c.names, nil
	}
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	dirs, objects, err := s.archives.Store().Prefixes(ctx, "", catalogMax)
	if err != nil {
		return nil, err
	}
	byName := map[string]CatalogEntry{}
	for _, o := range objects {
		if name, ok := strings.CutSuffix(o.Key, archive.Ext); ok && name != "" {
			byName[name] = CatalogEntry{Name: name, Kind: "pmtiles", TileJSON: tilename.TileJSONKey(name)}
		}
	}
	for _, o := range objects {
		// A database is a tileset unless an archive of its name is served.
		if name, ok := strings.CutSuffix(o.Key, archive.MBTilesExt); ok && name != "" && s.archives.MBTiles() && byName[name].Name == "" {
			byName[name] = CatalogEntry{Name: name, Kind: "mbtiles", TileJSON: name + ".json"}
		}
	}
	var mu sync.Mutex // guards byName below
	var wg sync.WaitGroup
	sem := make(chan struct{}, catalogHeads)
	for _, d := range dirs {
		name := strings.TrimSuffix(d, "/")
		if _, ok := byName[name]; ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := s.archives.Store().Head(ctx, tilename.MetadataKey(name))
			if err != nil {
				// No metadata.json: a tileset when its keys show one.
				_, found, lerr := s.archives.ListPyramid(ctx, name)
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
