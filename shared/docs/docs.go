// Package docs renders the answers that name the URL they are served from,
// and composes the ones the tiers do not hold: TileJSON (its tile URLs),
// MapLibre styles (NAME/style.json), IIIF info.json (its image id), font
// stacks of glyph ranges, and the catalog of tilesets and images. The tiers
// hold documents as the origin gave them, independent of any base URL, so
// purges, revalidation and staleness work as for tiles; this package
// renders each for the base URL of its answer and keeps the rendering in a
// small byte-bounded cache of its own, which every purge of this instance
// trims (Purged). It is safe for concurrent use.
package docs

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs/iiif"
	"github.com/tilesieve/tilesieve/shared/docs/style"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// A rendering is kept in a small SIEVE of its own (docs) under the key, the
// base and the source's ETag. One base per instance is typical (PUBLIC_URL,
// or the one CDN host), so a document is rendered once per version, and a
// request with another Host costs a render, never a wrong answer.

// docsBytes bounds the rendered documents kept.
const docsBytes = 4 << 20

// Deps are the parts the documents are built with. Prepare and Decode are
// required.
type Deps struct {
	// Prepare readies an answer of key (the HTTP layer's formatting) before
	// it is kept, so a kept rendering formats nothing when served.
	Prepare func(key string, t *tile.Tile)
	// Decode decodes a body stored with a content coding, returning it as
	// it is for a coding it does not decode.
	Decode func(enc string, b []byte) ([]byte, error)
	// Archives lists the tilesets for the catalog; nil: no catalog.
	Archives Archives
	Logger   *slog.Logger
	Now      func() time.Time
}

// Docs renders and composes documents; see the package doc.
type Docs struct {
	eng      Engine
	prepare  func(string, *tile.Tile)
	decode   func(string, []byte) ([]byte, error)
	archives Archives // nil: no catalog
	log      *slog.Logger
	now      func() time.Time
	docs     *memory.Cache // renderings and compositions, by key, base and source ETags
	catalog  catalogCache
}

// New builds the document renderer over eng, whose every purge trims it
// (Purged).
func New(eng Engine, d Deps) (*Docs, error) {
	if eng == nil || d.Prepare == nil || d.Decode == nil {
		return nil, errors.New("docs: the engine, Prepare and Decode are required")
	}
	c, err := memory.New(memory.Config{MaxBytes: docsBytes})
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	s := &Docs{eng: eng, prepare: d.Prepare, decode: d.Decode, archives: d.Archives,
		log: defaults.Logger(d.Logger), now: defaults.Clock(d.Now), docs: c}
	eng.OnPurge(s.Purged)
	return s, nil
}

// Engine is the tier engine documents are read through (font ranges) and
// purged with; *tiers.Engine is one.
type Engine interface {
	Reader
	OnPurge(fn func(prefix string))
}

// Purged runs inside every purge of prefix on this instance: renderings of
// what it covers are dropped, and the catalog is listed afresh.
func (s *Docs) Purged(prefix string) {
	s.catalog.gen.Add(1)
	s.docs.DeletePrefix(prefix)
}

// Kind reports whether t at key is a TileJSON built for a tileset
// (NAME.json: from an archive, a database, a metadata.json or the keys), or
// another document that names the URL it is served from: a style
// (NAME/style.json) or a IIIF info.json. Render renders either.
func Kind(key string, t *tile.Tile) (tileJSON, named bool) {
	built := strings.HasSuffix(t.ETag, tileset.Tag+`"`)
	tileJSON = built && !strings.Contains(key, "/")
	_, isStyle := style.NameFromKey(key)
	named = isStyle || strings.HasSuffix(key, "/"+iiif.InfoName) || built && placeholderDoc(key)
	return tileJSON, named
}

// placeholderDoc reports whether key is a document this server builds with
// tileset.PlaceholderBase in every URL it holds: the info.json and the
// manifest of an image served as IIIF (shared/images).
func placeholderDoc(key string) bool {
	return strings.HasPrefix(key, "iiif/") && (strings.HasSuffix(key, "/"+iiif.InfoName) || strings.HasSuffix(key, "/manifest.json"))
}

// Render returns t as answered under base, the public base URL of its
// request: a TileJSON built for a tileset with tile URLs under base, a
// style with the URLs that are ours under it, an info.json with its image
// id under it; any other tile as it is.
func (s *Docs) Render(key, base string, t *tile.Tile) *tile.Tile {
	isTileJSON, named := Kind(key, t)
	if !isTileJSON && !named {
		return t
	}
	memo := key + "\x00" + base + "\x00" + t.ETag
	if r, ok := s.docs.Get(memo); ok {
		return r
	}
	body, err := s.decode(t.ContentEncoding, t.Body)
	if err != nil {
		return t
	}
	var out []byte
	if name, isStyle := style.NameFromKey(key); isStyle {
		out, err = style.Rewrite(body, base, name)
	} else if isTileJSON {
		out, err = renderTileJSON(body, base, strings.TrimSuffix(key, ".json"))
	} else if strings.HasSuffix(t.ETag, tileset.Tag+`"`) && placeholderDoc(key) {
		out = bytes.ReplaceAll(body, []byte(tileset.PlaceholderBase), []byte(base))
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
	return tile.DerivedTag(etag, "~"+strconv.FormatUint(uint64(h.Sum32()), 36))
}

// Base is what the public base URL of a request is chosen from.
type Base struct {
	// PublicURL (PUBLIC_URL) is the base of every answer when set.
	PublicURL string
	// CDNSecret is the value of the CDN's secret header on requests that
	// came through the CDN; only those may name the host the answers' URLs
	// use. "" believes no forwarded host.
	CDNSecret string
}

// URL is the public base URL of a request that came to host, carrying
// secret in the CDN's secret header and forwardedHost in X-Forwarded-Host:
// PUBLIC_URL, else the CDN's forwarded host when the request came through
// the CDN, else the host the request came to. A forwarded host from anyone
// else is ignored: whoever could choose it could put their own URLs into
// documents.
func (b Base) URL(secret, forwardedHost, host string) string {
	if b.PublicURL != "" {
		return strings.TrimSuffix(b.PublicURL, "/")
	}
	proto, fwd := "", ""
	if b.fromCDN(secret) {
		// Viewers reach the CDN over https only (the distribution redirects
		// http), and CloudFront forwards a viewer-sent X-Forwarded-Proto as
		// it came, outside the cache key: believing it would let one viewer
		// cache http:// URLs (blocked as mixed content) for everyone.
		fwd = firstListValue(forwardedHost)
	}
	if validHost(fwd) {
		proto, host = "https", fwd
	}
	if !validHost(host) {
		host = "localhost"
	}
	if proto != "https" {
		proto = "http"
	}
	return proto + "://" + host
}

// fromCDN reports whether secret is the CDN's. Without one set, no request
// is trusted.
func (b Base) fromCDN(secret string) bool {
	if b.CDNSecret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(secret), []byte(b.CDNSecret)) == 1
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
