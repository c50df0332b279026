package tileserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/disk"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/tile"
)

func hashToken(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// serveAdmin routes /_tilesieve/…: the health check (always on) and the
// admin API (only with ADMIN_TOKEN). Nothing here may be cached by the CDN.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	route := strings.TrimPrefix(r.URL.Path, adminPrefix)
	if route == "health" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.notAllowed(w, "GET, HEAD")
			return
		}
		s.writeJSON(w, http.StatusOK, s.health())
		return
	}
	if route == "catalog" {
		s.serveCatalog(w, r) // public and read-only: no token
		return
	}
	if s.cfg.AdminToken == "" {
		s.plain(w, http.StatusNotFound, "not found")
		return
	}
	if !s.authorized(w, r) {
		return
	}
	switch {
	case route == "purge" && r.Method == http.MethodPost:
		q := r.URL.Query()
		if len(q["prefix"]) > 1 {
			s.plain(w, http.StatusBadRequest, "one prefix per purge")
			return
		}
		s.adminPurge(w, r, q.Get("prefix"))
	case strings.HasPrefix(route, "cache/") && r.Method == http.MethodDelete:
		// DELETE /_tilesieve/cache/<prefix>: the prefix is the rest of the path.
		prefix := strings.TrimPrefix(strings.TrimPrefix(r.URL.EscapedPath(), adminPrefix), "cache/")
		unescaped, err := url.PathUnescape(prefix)
		if err != nil {
			s.plain(w, http.StatusBadRequest, "bad prefix escape")
			return
		}
		s.adminPurge(w, r, unescaped)
	case route == "keys" && r.Method == http.MethodGet:
		s.adminKeys(w, r)
	case route == "stats" && r.Method == http.MethodGet:
		s.writeJSON(w, http.StatusOK, s.Stats())
	case route == "purge":
		s.notAllowed(w, http.MethodPost)
	case strings.HasPrefix(route, "cache/"):
		s.notAllowed(w, http.MethodDelete)
	case route == "keys" || route == "stats":
		s.notAllowed(w, http.MethodGet)
	default:
		s.plain(w, http.StatusNotFound, "not found")
	}
}

// notAllowed is a 405 with the Allow header RFC 9110 requires.
func (s *Server) notAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	s.plain(w, http.StatusMethodNotAllowed, "method not allowed")
}

// TokenHeader carries the admin token where Authorization cannot: behind
// CloudFront origin access control or an AWS_IAM function URL, Authorization
// holds the request's SigV4 signature.
const TokenHeader = "X-Tilesieve-Token"

// authorized checks the admin token (Authorization: Bearer, or TokenHeader)
// in constant time: 401 without one, 403 with a wrong one.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok := r.Header.Get(TokenHeader)
	if tok == "" {
		tok = bearerToken(r.Header.Get("Authorization"))
	}
	if tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tilesieve"`)
		s.plain(w, http.StatusUnauthorized, "admin token required")
		return false
	}
	got := hashToken(tok)
	if subtle.ConstantTimeCompare(got[:], s.adminToken[:]) != 1 {
		s.plain(w, http.StatusForbidden, "wrong admin token")
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
func (s *Server) adminPurge(w http.ResponseWriter, r *http.Request, prefix string) {
	all, ok := r.URL.Query()["all"]
	switch {
	case ok && (len(all) != 1 || all[0] != "true"):
		s.plain(w, http.StatusBadRequest, "all: the only value is true")
		return
	case ok && prefix != "":
		s.plain(w, http.StatusBadRequest, "a prefix and all=true exclude each other")
		return
	case !ok && prefix == "":
		s.plain(w, http.StatusBadRequest, "prefix required (all=true purges everything)")
		return
	}
	if err := tile.ValidatePrefix(prefix); err != nil {
		s.plain(w, http.StatusBadRequest, "bad prefix: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	req := purge.PrefixRequest(prefix, "admin", "admin:"+prefix+":"+strconv.FormatInt(s.now().UnixNano(), 10))
	res := PurgeResult{Prefix: prefix, Prefixes: req.Prefixes}
	status := http.StatusOK
	if s.purger != nil {
		out, err := s.purger.Purge(ctx, req)
		res.JournalSeq, res.CDNPaths = out.Seq, out.Paths
		if out.HandedOff {
			res.CDNTargets = out.Targets
		}
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
	for _, p := range req.Prefixes {
		m, d, _ := s.purgeTiers(p)
		res.MemoryEntries += m
		res.DiskEntries += d
	}
	s.log.Info("admin purge", "prefix", prefix, "prefixes", req.Prefixes, "journal_seq", res.JournalSeq,
		"cdn_handed_off", len(res.CDNTargets) > 0, "memory_entries", res.MemoryEntries, "disk_entries", res.DiskEntries)
	s.writeJSON(w, status, res)
}

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
func (s *Server) adminKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	if err := tile.ValidatePrefix(prefix); err != nil {
		s.plain(w, http.StatusBadRequest, "bad prefix: "+err.Error())
		return
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.plain(w, http.StatusBadRequest, "limit must be a positive whole number")
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
	s.mem.Scan(prefix, limit, func(it cache.Item) bool {
		if isVariantKey(it.Key) {
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
func (s *Server) remembered404(it cache.Item) bool {
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

func (s *Server) health() Health {
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
	Memory  cache.Stats  `json:"memory"`
	Disk    *disk.Stats  `json:"disk,omitempty"`
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
	// Relookups counts tiles looked up again because the journal check
	// running beside their request applied a purge (see tiers.Engine.Get).
	Relookups int64 `json:"relookups"`
	// OriginInFlight is the origin fetches running now; OriginInFlightPeak
	// the most at once (at most MAX_ORIGIN_FETCHES).
	OriginInFlight     int64 `json:"origin_in_flight"`
	OriginInFlightPeak int64 `json:"origin_in_flight_peak"`
}

// Stats returns the tier and handler counters.
func (s *Server) Stats() Stats {
	es := s.eng.Stats()
	c := &s.stats
	return Stats{
		Handler: HandlerStats{
			Requests: c.requests.Load(), MemoryHits: es.MemoryHits, DiskHits: es.DiskHits,
			Misses: es.Misses, Revalidated: es.Revalidated, Stale: es.Stale, OutageStale: es.OutageStale, NegativeHits: es.NegativeHits,
			NotFound: c.notFound.Load(), BadRequests: c.badRequests.Load(),
			OriginFetches: es.OriginFetches, OriginErrors: es.OriginErrors,
			MergedMisses: es.MergedMisses, DroppedFills: es.DroppedFills, DiskWriteErrors: es.DiskWriteErrors,
			Relookups: es.Relookups, OriginInFlight: es.OriginInFlight, OriginInFlightPeak: es.OriginInFlightPeak,
		},
		Memory: es.Memory,
		Disk:   es.Disk,
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		s.plain(w, http.StatusInternalServerError, "encoding failed")
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
