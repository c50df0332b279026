// Package admin is the tile function's reserved path space, /_tilesieve/:
// the health check and the public catalog (always on), and, behind a
// token compared in constant time, the admin API: purge a prefix through
// the one purge pipeline (the journal, so every instance purges, and the
// CDN through the sync worker) and on this instance at once, stream the
// cached keys under a prefix, and the tier and handler counters. Nothing it
// answers may be cached by the CDN. The handler is safe for concurrent use.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/images"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

func hashToken(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// Prefix is the reserved path space of the health check and admin API.
const Prefix = "/_tilesieve/"

// Purger carries an admin purge to every instance (the journal) and to the
// CDN (through the sync worker): the purge pipeline of shared/purge, which
// the composition root adapts to it.
type Purger interface {
	// Prefixes lists what a purge of prefix covers: prefix and what it
	// derives (an archive's tileset and TileJSON, a font's stacks),
	// coalesced.
	Prefixes(prefix string) []string
	// Purge records prefixes in the journal, then invalidates the CDN or
	// hands the invalidation to the worker. A journal error leaves Seq 0.
	Purge(ctx context.Context, prefixes []string, batchID string) (PurgeOutcome, error)
}

// PurgeOutcome is what a Purger did.
type PurgeOutcome struct {
	Seq      uint64   // the journal entry
	CDNPaths []string // the CDN paths invalidated; none when handed off
	// Handed are the CDN targets handed to the worker, when it was.
	Handed []string
}

// Config is the admin API's behaviour.
type Config struct {
	Token string // empty disables the admin API; health and catalog stay on
	Now   func() time.Time
}

// Deps are what the admin API reads and purges. Engine and Memory are
// required; the rest may be nil.
type Deps struct {
	Engine *tiers.Engine // this instance's tiers: purged at once, and counted
	Memory *memory.Cache // the engine's, for the key listing
	Disk   *disk.Store   // the engine's, for the key listing; nil: none
	Purger Purger        // nil: admin purges of this instance only
	// Handler returns the HTTP layer's own counters for the stats.
	Handler func() HandlerStats
	// IIIF is the image service whose answers the stats count; nil: none.
	IIIF *images.Service
	// Catalog lists the tilesets of GET /_tilesieve/catalog, public and
	// read-only (docs.Docs.Tilesets); nil: 404.
	Catalog func(ctx context.Context) ([]docs.CatalogEntry, error)
	// Images lists the catalog's images (docs.Docs.Images); nil: none.
	Images func(ctx context.Context) ([]docs.ImageEntry, error)
	// BaseURL is the public base URL of a request: the catalog's TileJSON
	// URLs are under it.
	BaseURL func(r *http.Request) string
	// PublicCORS puts Access-Control-Allow-Origin: * on the catalog.
	PublicCORS bool
	Logger     *slog.Logger
}

// Handler serves the paths under Prefix.
type Handler struct {
	token      string
	hash       [32]byte // sha256 of the token; compared in constant time
	now        func() time.Time
	eng        *tiers.Engine
	mem        *memory.Cache
	disk       *disk.Store
	purger     Purger
	handler    func() HandlerStats
	iiif       *images.Service
	catalog    func(context.Context) ([]docs.CatalogEntry, error)
	images     func(context.Context) ([]docs.ImageEntry, error)
	baseURL    func(*http.Request) string
	publicCORS bool
	log        *slog.Logger
}

// New builds the admin handler.
func New(cfg Config, d Deps) (*Handler, error) {
	if d.Engine == nil || d.Memory == nil {
		return nil, errors.New("admin: Engine and Memory are required")
	}
	h := &Handler{token: cfg.Token, now: cfg.Now, eng: d.Engine, mem: d.Memory, disk: d.Disk,
		purger: d.Purger, handler: d.Handler, catalog: d.Catalog, images: d.Images, iiif: d.IIIF, baseURL: d.BaseURL, publicCORS: d.PublicCORS, log: d.Logger}
	if cfg.Token != "" {
		h.hash = hashToken(cfg.Token)
	}
	h.now, h.log = defaults.Clock(h.now), defaults.Logger(h.log)
	if h.baseURL == nil {
		h.baseURL = func(r *http.Request) string { return "http://" + r.Host }
	}
	if h.handler == nil {
		h.handler = func() HandlerStats { return HandlerStats{} }
	}
	return h, nil
}

// ServeHTTP routes /_tilesieve/…: the health check (always on) and the
// admin API (only with ADMIN_TOKEN). Nothing here may be cached by the CDN.
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	route := strings.TrimPrefix(r.URL.Path, Prefix)
	if route == "health" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notAllowed(w, "GET, HEAD")
			return
		}
		writeJSON(w, http.StatusOK, s.health())
		return
	}
	if route == "catalog" {
		s.serveCatalog(w, r) // public and read-only: no token
		return
	}
	if s.token == "" {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	if !s.authorized(w, r) {
		return
	}
	switch {
	case route == "purge" && r.Method == http.MethodPost:
		q := r.URL.Query()
		if len(q["prefix"]) > 1 {
			plain(w, http.StatusBadRequest, "one prefix per purge")
			return
		}
		s.adminPurge(w, r, q.Get("prefix"))
	case strings.HasPrefix(route, "cache/") && r.Method == http.MethodDelete:
		// DELETE /_tilesieve/cache/<prefix>: the prefix is the rest of the path.
		prefix := strings.TrimPrefix(strings.TrimPrefix(r.URL.EscapedPath(), Prefix), "cache/")
		unescaped, err := url.PathUnescape(prefix)
		if err != nil {
			plain(w, http.StatusBadRequest, "bad prefix escape")
			return
		}
		s.adminPurge(w, r, unescaped)
	case route == "keys" && r.Method == http.MethodGet:
		s.adminKeys(w, r)
	case route == "stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Stats())
	case route == "purge":
		notAllowed(w, http.MethodPost)
	case strings.HasPrefix(route, "cache/"):
		notAllowed(w, http.MethodDelete)
	case route == "keys" || route == "stats":
		notAllowed(w, http.MethodGet)
	default:
		plain(w, http.StatusNotFound, "not found")
	}
}

// notAllowed is a 405 with the Allow header RFC 9110 requires.
func notAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	plain(w, http.StatusMethodNotAllowed, "method not allowed")
}

// TokenHeader carries the admin token where Authorization cannot: behind
// CloudFront origin access control or an AWS_IAM function URL, Authorization
// holds the request's SigV4 signature.
const TokenHeader = "X-Tilesieve-Token"

// authorized checks the admin token (Authorization: Bearer, or TokenHeader)
// in constant time: 401 without one, 403 with a wrong one.
func (s *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok := r.Header.Get(TokenHeader)
	if tok == "" {
		tok = bearerToken(r.Header.Get("Authorization"))
	}
	if tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tilesieve"`)
		plain(w, http.StatusUnauthorized, "admin token required")
		return false
	}
	got := hashToken(tok)
	if subtle.ConstantTimeCompare(got[:], s.hash[:]) != 1 {
		plain(w, http.StatusForbidden, "wrong admin token")
		return false
	}
	return true
}

// bearerToken is the token of an Authorization value in the Bearer scheme,
// or "". The scheme is case-insensitive and followed by one or more spaces
// (RFC 9110 §11.4); a value with no scheme is not a token, or a token
// pasted in the wrong header would pass.
func bearerToken(v string) string {
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimLeft(rest, " ")
}

// PurgeResult is what an admin purge issued.
type PurgeResult struct {
	Prefix string `json:"prefix"`
	// Prefixes are what was purged: the prefix and the names it derives
	// (an archive's tileset and TileJSON, a tileset's TileJSON).
	Prefixes   []string `json:"prefixes"`
	JournalSeq uint64   `json:"journal_seq,omitempty"`
	// CDNTargets were handed to the sync worker, which invalidates the CDN
	// for them after the settle delay, within its budget.
	CDNTargets    []string `json:"cdn_targets,omitempty"`
	CDNPaths      []string `json:"cdn_paths,omitempty"`
	MemoryEntries int      `json:"memory_entries"`
	DiskEntries   int      `json:"disk_entries"`
	Errors        []string `json:"errors,omitempty"`
}

// adminPurge purges a prefix through the purge pipeline (a journal entry, so
// every instance purges, and the CDN invalidation handed to the worker, as
// for an S3 change) and purges this instance at once. The empty prefix,
// which empties every tier everywhere, must be asked for with all=true
// alone, so a forgotten or mistyped parameter cannot do it.
func (s *Handler) adminPurge(w http.ResponseWriter, r *http.Request, prefix string) {
	all, ok := r.URL.Query()["all"]
	switch {
	case ok && (len(all) != 1 || all[0] != "true"):
		plain(w, http.StatusBadRequest, "all: the only value is true")
		return
	case ok && prefix != "":
		plain(w, http.StatusBadRequest, "a prefix and all=true exclude each other")
		return
	case !ok && prefix == "":
		plain(w, http.StatusBadRequest, "prefix required (all=true purges everything)")
		return
	}
	if err := tile.ValidatePrefix(prefix); err != nil {
		plain(w, http.StatusBadRequest, "bad prefix: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	res := PurgeResult{Prefix: prefix, Prefixes: []string{prefix}}
	status := http.StatusOK
	if s.purger != nil {
		res.Prefixes = s.purger.Prefixes(prefix)
		out, err := s.purger.Purge(ctx, res.Prefixes, "admin:"+prefix+":"+strconv.FormatInt(s.now().UnixNano(), 10))
		res.JournalSeq, res.CDNPaths, res.CDNTargets = out.Seq, out.CDNPaths, out.Handed
		if err != nil {
			stage := "cdn: "
			if out.Seq == 0 {
				stage = "journal: "
			}
			s.log.Warn("admin purge: "+strings.TrimSuffix(stage, ": ")+" failed", "prefix", prefix, "err", err)
			res.Errors = append(res.Errors, stage+err.Error())
			status = http.StatusBadGateway
		}
	}
	for _, p := range res.Prefixes {
		m, d, _ := s.eng.PurgeTiers(p)
		res.MemoryEntries += m
		res.DiskEntries += d
	}
	s.log.Info("admin purge", "prefix", prefix, "prefixes", res.Prefixes, "journal_seq", res.JournalSeq,
		"cdn_handed_off", len(res.CDNTargets) > 0, "memory_entries", res.MemoryEntries, "disk_entries", res.DiskEntries)
	writeJSON(w, status, res)
}

// hidden reports a memory key that is part of another entry (a tile's
// decoded variant, under the tile's key and a control byte, which no tile
// key holds): left out of the key listing.
func hidden(key string) bool { return strings.IndexByte(key, 0) >= 0 }

// keyLine is one line of the NDJSON key listing.
type keyLine struct {
	Key  string `json:"key"`
	Tier string `json:"tier"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
	// Missing marks a remembered 404 (memory only), not an empty tile.
	Missing bool `json:"missing"`
}

// adminKeys streams this instance's cached keys under a prefix as NDJSON,
// memory tier first, then disk, flushing as it goes.
func (s *Handler) adminKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	if err := tile.ValidatePrefix(prefix); err != nil {
		plain(w, http.StatusBadRequest, "bad prefix: "+err.Error())
		return
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			plain(w, http.StatusBadRequest, "limit must be a positive whole number")
			return
		}
		limit = n
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	ctx := r.Context()
	sent := 0
	emit := func(l keyLine) bool {
		if ctx.Err() != nil || enc.Encode(l) != nil {
			return false
		}
		sent++
		if sent%64 == 0 {
			rc.Flush()
		}
		return sent < limit
	}
	s.mem.Scan(prefix, limit, func(it memory.Item) bool {
		if hidden(it.Key) {
			return true // a decoded variant is part of its tile, not a key of its own
		}
		return emit(keyLine{Key: it.Key, Tier: "memory", Size: it.Size, ETag: it.ETag, Missing: s.remembered404(it)})
	})
	if s.disk != nil && sent < limit {
		s.disk.Scan(prefix, limit-sent, func(it disk.Item) bool {
			return emit(keyLine{Key: it.Key, Tier: "disk", Size: it.Size, ETag: it.ETag})
		})
	}
	rc.Flush()
}

// remembered404 reports whether a listed memory entry is a remembered 404.
// cache.Item does not carry Tile.Missing, so the few entries shaped like one
// (no body, no ETag: an S3 object always has an ETag) are read back; that
// read marks them visited, which only they pay.
func (s *Handler) remembered404(it memory.Item) bool {
	if it.Size != 0 || it.ETag != "" {
		return false
	}
	t, ok := s.mem.Get(it.Key)
	return ok && t.Missing
}

// Health is the body of GET /_tilesieve/health.
type Health struct {
	Status string     `json:"status"`
	Memory TierHealth `json:"memory"`
	Disk   TierHealth `json:"disk"`
}

// TierHealth is the size of one tier.
type TierHealth struct {
	Enabled  bool  `json:"enabled"`
	Entries  int64 `json:"entries"`
	Bytes    int64 `json:"bytes"`
	MaxBytes int64 `json:"max_bytes"`
}

func (s *Handler) health() Health {
	ms := s.mem.Stats()
	h := Health{Status: "ok", Memory: TierHealth{Enabled: true, Entries: ms.Entries, Bytes: ms.Bytes, MaxBytes: ms.MaxBytes}}
	if s.disk != nil {
		ds := s.disk.Stats()
		h.Disk = TierHealth{Enabled: true, Entries: ds.Entries, Bytes: ds.Bytes, MaxBytes: ds.MaxBytes}
	}
	return h
}

// Stats is the body of GET /_tilesieve/stats.
type Stats struct {
	Handler HandlerStats `json:"handler"`
	Memory  memory.Stats `json:"memory"`
	Disk    *disk.Stats  `json:"disk,omitempty"`
	Images  *ImageStats  `json:"images,omitempty"`
}

// ImageStats counts how the IIIF answers were made, and the pixels the
// ones being made hold.
type ImageStats struct {
	// Stored counts answers that were a stored tile's bytes, no decode;
	// Rendered those decoded, scaled and encoded; Refused those refused
	// once made, their encoding over the byte bound (each remembered).
	Stored   int64 `json:"stored"`
	Rendered int64 `json:"rendered"`
	Refused  int64 `json:"refused"`
	// RenderBytes is the pixels the answers being made hold now
	// (IIIF_RENDER_BYTES bounds it), RenderBytesPeak the most at once,
	// RenderWaits the answers that waited for room.
	RenderBytes     int64 `json:"render_bytes"`
	RenderBytesPeak int64 `json:"render_bytes_peak"`
	RenderWaits     int64 `json:"render_waits"`
}

// HandlerStats counts what the handler did.
type HandlerStats struct {
	Requests    int64 `json:"requests"`
	MemoryHits  int64 `json:"memory_hits"`
	DiskHits    int64 `json:"disk_hits"`
	Misses      int64 `json:"misses"`
	Revalidated int64 `json:"revalidated"`
	Stale       int64 `json:"stale"`
	// OutageStale counts the stale answers given while neither the journal
	// nor S3 answered (OUTAGE_STALE).
	OutageStale     int64 `json:"outage_stale"`
	NegativeHits    int64 `json:"negative_hits"`
	NotFound        int64 `json:"not_found"`
	BadRequests     int64 `json:"bad_requests"`
	OriginFetches   int64 `json:"origin_fetches"`
	OriginErrors    int64 `json:"origin_errors"`
	MergedMisses    int64 `json:"merged_misses"`
	DroppedFills    int64 `json:"dropped_fills"`
	DiskWriteErrors int64 `json:"disk_write_errors"`
	// OriginInFlight is the origin fetches running now; OriginInFlightPeak
	// the most at once (at most MAX_ORIGIN_FETCHES).
	OriginInFlight     int64 `json:"origin_in_flight"`
	OriginInFlightPeak int64 `json:"origin_in_flight_peak"`
}

// Stats returns the tier and handler counters (GET /_tilesieve/stats).
func (s *Handler) Stats() Stats {
	es := s.eng.Stats()
	hs := s.handler() // the HTTP layer's own: requests, not found, bad requests
	hs.MemoryHits, hs.DiskHits, hs.Misses = es.MemoryHits, es.DiskHits, es.Misses
	hs.Revalidated, hs.Stale, hs.OutageStale, hs.NegativeHits = es.Revalidated, es.Stale, es.OutageStale, es.NegativeHits
	hs.OriginFetches, hs.OriginErrors = es.OriginFetches, es.OriginErrors
	hs.MergedMisses, hs.DroppedFills, hs.DiskWriteErrors = es.MergedMisses, es.DroppedFills, es.DiskWriteErrors
	hs.OriginInFlight, hs.OriginInFlightPeak = es.OriginInFlight, es.OriginInFlightPeak
	st := Stats{Handler: hs, Memory: es.Memory, Disk: es.Disk}
	if s.iiif != nil {
		c, px := s.iiif.Stats(), s.iiif.Pixels()
		st.Images = &ImageStats{Stored: c.Stored.Load(), Rendered: c.Rendered.Load(), Refused: c.Refused.Load(),
			RenderBytes: px.InFlight, RenderBytesPeak: px.InFlightPeak, RenderWaits: px.Waited}
	}
	return st
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		plain(w, http.StatusInternalServerError, "encoding failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// adminTimeout bounds a purge's journal and CDN calls when the request has
// no sooner deadline of its own.
const adminTimeout = 20 * time.Second

// plain writes a short text answer.
func plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)+1))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}
