package tileserver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// source is the tier that answered, as X-Cache names it.
type source = tiers.Source

const (
	srcMemory      = tiers.FromMemory
	srcDisk        = tiers.FromDisk
	srcOrigin      = tiers.FromOrigin
	srcRevalidated = tiers.Revalidated
	srcStale       = tiers.Stale
)

// xCache is the X-Cache value of an answer from src.
func xCache(src source) string { return xCacheValues[src][0] }

// Shared field values: capped one-element slices, never written to.
var (
	xCacheValues = [...][]string{
		0:              {"MISS"},
		srcMemory:      {"HIT-MEMORY"},
		srcDisk:        {"HIT-DISK"},
		srcOrigin:      {"MISS"},
		srcRevalidated: {"REVALIDATED"},
		srcStale:       {"STALE"},
	}
	acceptRangesBytes = []string{"bytes"}
	varyEncoding      = []string{"Accept-Encoding"}
	varyOrigin        = []string{"Origin"}
	varyBoth          = []string{"Accept-Encoding, Origin"}
	noStore           = []string{"no-store"}
	textPlain         = []string{"text/plain; charset=utf-8"}
	allowAny          = []string{"*"}
	exposeHeaders     = []string{"ETag, Content-Length, Content-Range, X-Cache, Server-Timing"}
	allowMethods      = []string{"GET, HEAD, OPTIONS"}
	preflightMaxAge   = []string{"86400"}
)

// prepared is what the server keeps beside a tile in the memory tier so that
// a hit formats nothing: the header values of its stored representation,
// and, on Lambda in BUFFERED mode, the whole function-URL payload but the
// two per-request values (Server-Timing and a reflected CORS origin),
// encoded once. Its Cost is charged with the tile's.
type prepared struct {
	contentType, contentEncoding, etag, lastModified, contentLength, cacheControl []string
	vary                                                                          []string

	// hit is every field of a 200 answer in the stored representation but
	// the first two (Server-Timing and X-Cache), in answerTile's order: what
	// a request without conditionals or a range is answered with, copied
	// whole (answerHit).
	hit []Field
	// document marks a TileJSON or IIIF info.json: answered as rendered
	// for the URL it is served from (docs.Docs.Render), not as stored.
	document bool

	// payload is the function-URL answer with a hole at split for
	// `,"Server-Timing":"…"` and a reflected origin: payload[:split], the
	// hole, payload[split:].
	payload []byte
	split   int
}

// Cost implements tile.Prepared.
func (p *prepared) Cost() int64 {
	n := tile.AllocBytes(int(preparedSize)) + tile.AllocBytes(cap(p.payload)) + tile.AllocBytes(cap(p.hit)*int(fieldSize))
	for _, v := range [][]string{p.contentType, p.contentEncoding, p.etag, p.lastModified, p.contentLength, p.cacheControl} {
		if v != nil {
			n += tile.AllocBytes(16) + tile.AllocBytes(len(v[0]))
		}
	}
	return n
}

// Payload returns the prepared function-URL payload around its hole, or
// nil when the tile has none.
func (p *prepared) Payload() (before, after []byte) {
	if p == nil || p.payload == nil {
		return nil, nil
	}
	return p.payload[:p.split], p.payload[p.split:]
}

// prepare builds t's prepared answer before t enters the memory tier at key.
func (s *Server) prepare(key string, t *tile.Tile) {
	if t.Missing || t.Prepared != nil {
		return
	}
	p := s.newPrepared(t)
	tileJSON, info := docs.Kind(key, t)
	p.document = tileJSON || info
	p.hit = s.hitFields(p)
	if s.cfg.Payloads && len(t.Body) <= MaxPayloadBody {
		s.buildPayload(p, t)
	}
	t.Prepared = p
}

// hitFields lists the fields answerTile writes after Server-Timing and
// X-Cache for a 200 in p's stored representation, in its order, when the
// CORS fields do not depend on the request.
func (s *Server) hitFields(p *prepared) []Field {
	f := make([]Field, 0, 10)
	add := func(name string, v []string) {
		if v != nil {
			f = append(f, Field{Name: name, Values: v})
		}
	}
	if s.cors.any {
		add("Access-Control-Allow-Origin", allowAny)
		add("Access-Control-Expose-Headers", exposeHeaders)
	}
	add("Vary", p.vary)
	add("Etag", p.etag)
	add("Last-Modified", p.lastModified)
	add("Cache-Control", p.cacheControl)
	add("Content-Type", p.contentType)
	add("Content-Encoding", p.contentEncoding)
	add("Accept-Ranges", acceptRangesBytes)
	add("Content-Length", p.contentLength)
	return slices.Clip(f)
}

// newPrepared is t's header values; prepare adds what a tile entering the
// memory tier keeps beside them.
func (s *Server) newPrepared(t *tile.Tile) *prepared {
	p := &prepared{
		contentType:   []string{t.ContentType},
		contentLength: []string{strconv.Itoa(len(t.Body))},
		cacheControl:  s.cacheControl,
	}
	if t.ETag != "" {
		p.etag = []string{t.ETag}
	}
	if !t.LastModified.IsZero() {
		var b [29]byte
		p.lastModified = []string{string(appendHTTPDate(b[:0], t.LastModified))}
	}
	if t.ContentEncoding != "" {
		p.contentEncoding = []string{t.ContentEncoding}
	}
	p.vary = s.vary(t.ContentEncoding != "")
	return p
}

// vary is the Vary value of a tile answer.
func (s *Server) vary(encoded bool) []string {
	switch {
	case encoded && s.cors.reflect:
		return varyBoth
	case encoded:
		return varyEncoding
	case s.cors.reflect:
		return varyOrigin
	}
	return nil
}

// answerTile answers with t (from tier src): the stored representation or
// the decoded one, after the conditional headers, and a range of it.
func (s *Server) answerTile(req *Request, resp *Response, key string, t *tile.Tile, src source, start time.Time) {
	p, _ := t.Prepared.(*prepared)
	if p == nil {
		// A tile that did not enter the memory tier (too large for it) is
		// prepared for this answer alone.
		p = s.newPrepared(t)
	}
	body, etag, encoding := t.Body, p.etag, p.contentEncoding
	stored := true
	decode, ok := s.mustDecode(req, resp, t, p)
	if !ok {
		return
	}
	if !decode && s.answerHit(req, resp, t, p, src, start) {
		return
	}
	streamed := int64(-1) // the decoded size, when the variant is decoded as it is written
	if decode {
		v := s.variantOf(key, t)
		if v.err != nil {
			msg := "stored tile is not valid " + codingName(t.ContentEncoding)
			if errors.Is(v.err, errTooLarge) {
				msg = "stored tile decodes past the limit; ask for it with Accept-Encoding: " + codingName(t.ContentEncoding)
			}
			s.answerPlain(req, resp, http.StatusBadGateway, msg)
			return
		}
		body, encoding, stored = v.body, nil, false
		if v.body == nil {
			streamed = v.size
		}
		if t.ETag != "" {
			// The decoded representation is another one: its own strong
			// ETag, so no conditional request confuses the two.
			etag = []string{identityETag(t.ETag)}
		}
	}
	s.validatorFields(req, resp, p, etag, src, start)
	if s.conditionalAnswered(req, resp, p, etag, encoding, t.LastModified) {
		return
	}
	if streamed >= 0 {
		s.answerDecodedStream(req, resp, key, t, streamed)
		return
	}
	resp.set("Accept-Ranges", acceptRangesBytes)
	if req.Method == http.MethodGet && req.get(HdrRange) != "" && ifRange(req.get(HdrIfRange), firstOr(etag), t.LastModified) {
		if lo, hi, ok := parseRange(req.get(HdrRange), int64(len(body))); ok {
			resp.setString("Content-Range", "bytes "+strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi-1, 10)+"/"+strconv.Itoa(len(body)))
			resp.setString("Content-Length", strconv.FormatInt(hi-lo, 10))
			resp.Status = http.StatusPartialContent
			resp.Body = body[lo:hi]
			return
		} else if lo < 0 {
			resp.setString("Content-Range", "bytes */"+strconv.Itoa(len(body)))
			s.answerPlain(req, resp, http.StatusRequestedRangeNotSatisfiable, "range not satisfiable")
			return
		}
		// Several ranges or one this server does not parse: the whole tile.
	}
	if stored {
		resp.set("Content-Length", p.contentLength)
	} else {
		resp.setString("Content-Length", strconv.Itoa(len(body)))
	}
	resp.Status = http.StatusOK
	if req.Method == http.MethodHead {
		return
	}
	resp.Body = body
	if stored && src == srcMemory && p.payload != nil {
		resp.prepared = p
	}
}

// variantOf is t's decoded variant: from the memory tier or one shared
// decode (decodedVariant), except for a document rendered for this request
// (its body is not the stored tile's), which is small and decoded here.
func (s *Server) variantOf(key string, t *tile.Tile) variant {
	if tileJSON, info := docs.Kind(key, t); !tileJSON && !info {
		return s.decodedVariant(key, t)
	}
	s.stats.decodes.Add(1)
	b, err := decodeTile(t.ContentEncoding, t.Body)
	if err != nil {
		s.log.Warn("stored "+codingName(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
	}
	return variant{body: b, size: int64(len(b)), err: err}
}

// answerDecodedStream completes the 200 of a decoded variant too large for
// the memory tier: its known size, and the body decoded as it is written
// (no range: the whole variant).
func (s *Server) answerDecodedStream(req *Request, resp *Response, key string, t *tile.Tile, size int64) {
	resp.setString("Content-Length", strconv.FormatInt(size, 10))
	resp.Status = http.StatusOK
	if req.Method == http.MethodHead {
		return
	}
	zr, err := decodeStream(t.ContentEncoding, io.NopCloser(bytes.NewReader(t.Body)))
	if err != nil {
		// It decoded a moment ago; only a broken decoder gets here.
		s.log.Warn("stored "+codingName(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
		resp.reset()
		s.answerPlain(req, resp, http.StatusBadGateway, "stored tile is not valid "+codingName(t.ContentEncoding))
		return
	}
	resp.Stream = zr
}

// answerHit answers the common request, a plain GET or HEAD of t's stored
// representation (no conditionals, no range, CORS fields that do not depend
// on the request, not stale), with t's prepared fields: what the general
// path below would write, without building it field by field. It reports
// false, having written nothing, for any other request.
func (s *Server) answerHit(req *Request, resp *Response, t *tile.Tile, p *prepared, src source, start time.Time) bool {
	if p.hit == nil || src == srcStale || (s.cors.reflect && req.get(HdrOrigin) != "") ||
		req.get(HdrIfNoneMatch) != "" || req.get(HdrIfModifiedSince) != "" ||
		req.get(HdrIfMatch) != "" || req.get(HdrIfUnmodifiedSince) != "" ||
		(req.Method == http.MethodGet && req.get(HdrRange) != "") {
		return false
	}
	s.timing(resp, src, start)
	resp.set("X-Cache", xCacheValues[src])
	resp.nfields += copy(resp.fields[resp.nfields:], p.hit)
	resp.Status = http.StatusOK
	if req.Method == http.MethodHead {
		return true
	}
	resp.Body = t.Body
	if src == srcMemory && p.payload != nil {
		resp.prepared = p
	}
	return true
}

// validatorFields sets the fields every tile answer carries, 304s included:
// timing, tier, CORS, Vary, the validators and Cache-Control (the short
// stale one for a stale copy).
func (s *Server) validatorFields(req *Request, resp *Response, p *prepared, etag []string, src source, start time.Time) {
	s.timing(resp, src, start)
	resp.set("X-Cache", xCacheValues[src])
	s.corsFields(req, resp)
	if p.vary != nil {
		resp.set("Vary", p.vary)
	}
	if etag != nil {
		resp.set("Etag", etag)
	}
	if p.lastModified != nil {
		resp.set("Last-Modified", p.lastModified)
	}
	if src == srcStale {
		resp.set("Cache-Control", s.staleCacheControl)
	} else {
		resp.set("Cache-Control", p.cacheControl)
	}
}

// mustDecode reports whether t, stored with a content coding, must be
// decoded for this client (gzip, br and zstd are decoded). ok is false, and
// resp holds the 406, for a coding this server cannot decode: it goes only
// to clients that accept it.
func (s *Server) mustDecode(req *Request, resp *Response, t *tile.Tile, p *prepared) (decode, ok bool) {
	if t.ContentEncoding == "" || accepts(req.get(HdrAcceptEncoding), t.ContentEncoding) {
		return false, true
	}
	if !decodable(t.ContentEncoding) {
		resp.set("Vary", p.vary)
		s.answerPlain(req, resp, http.StatusNotAcceptable, "tile stored as "+t.ContentEncoding+"; the client does not accept it")
		return false, false
	}
	return true, true
}

// conditionalAnswered applies the conditional headers to the representation
// with etag: true when resp is complete (412 or 304); else it adds the
// representation's Content-Type and Content-Encoding.
func (s *Server) conditionalAnswered(req *Request, resp *Response, p *prepared, etag, encoding []string, lastModified time.Time) bool {
	switch status := preconditions(req, firstOr(etag), lastModified); status {
	case http.StatusPreconditionFailed:
		s.answerPlain(req, resp, status, "precondition failed")
		return true
	case http.StatusNotModified:
		resp.Status = status
		return true
	}
	resp.set("Content-Type", p.contentType)
	if encoding != nil {
		resp.set("Content-Encoding", encoding)
	}
	return false
}

func firstOr(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// timing sets the Server-Timing field: the tier src and the time since start.
func (s *Server) timing(resp *Response, src source, start time.Time) {
	resp.elapsed = time.Since(start)
	v := serverTiming(src, resp.elapsed)
	resp.timing = v[0]
	resp.set("Server-Timing", v)
}

// Timing is the answer's Server-Timing value, or "".
func (r *Response) Timing() string { return r.timing }

// serverTiming is the Server-Timing value of an answer from src after d.
// The values of the memory and disk tiers' sub-millisecond answers (nearly
// all of theirs) are made once, so a hit formats and allocates nothing.
func serverTiming(src source, d time.Duration) []string {
	us := d.Microseconds()
	if (src == srcMemory || src == srcDisk) && us >= 0 && us < timingSteps {
		i := int(src-srcMemory)*timingSteps + int(us)
		v := fastTimings()
		return v[i : i+1 : i+1]
	}
	return []string{string(appendServerTiming(make([]byte, 0, 32), src, d))}
}

// timingSteps is how many microsecond values fastTimings holds per tier.
const timingSteps = 1000

// fastTimings are the Server-Timing values of memory and disk answers of
// 0 to 999 µs, in that order: one array of strings over one buffer.
var fastTimings = sync.OnceValue(func() []string {
	var b []byte
	ends := make([]int, 0, 2*timingSteps)
	for _, src := range []source{srcMemory, srcDisk} {
		for us := range timingSteps {
			b = appendServerTiming(b, src, time.Duration(us)*time.Microsecond)
			ends = append(ends, len(b))
		}
	}
	all := string(b)
	v := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		v[i], start = all[start:end], end
	}
	return v
})

// answerMissing answers for a tile the origin does not have; src says
// whether the origin said so now (MISS) or a remembered 404 did (HIT-MEMORY).
func (s *Server) answerMissing(req *Request, resp *Response, key string, src source) {
	resp.set("Cache-Control", s.negativeCacheControl)
	resp.set("X-Cache", xCacheValues[src])
	s.corsFields(req, resp)
	switch s.cfg.MissingTile {
	case "204":
		resp.Status = http.StatusNoContent
		return
	case "empty":
		if e, ok := s.empty[strings.ToLower(path.Ext(key))]; ok {
			resp.setString("Content-Type", e.contentType)
			resp.setString("Content-Length", strconv.Itoa(len(e.body)))
			resp.Status = http.StatusOK
			if req.Method != http.MethodHead {
				resp.Body = e.body
			}
			return
		}
	}
	s.answerPlain(req, resp, http.StatusNotFound, "tile not found")
}

// answerPlain answers with a short text body; fields set before stay.
func (s *Server) answerPlain(req *Request, resp *Response, status int, msg string) {
	if resp.Get("Cache-Control") == "" {
		resp.set("Cache-Control", noStore)
	}
	if resp.Get("Access-Control-Allow-Origin") == "" {
		s.corsFields(req, resp)
	}
	resp.set("Content-Type", textPlain)
	resp.setString("Content-Length", strconv.Itoa(len(msg)+1))
	resp.Status = status
	if req.Method != http.MethodHead {
		resp.Body = []byte(msg + "\n")
	}
}

// preconditions applies RFC 9110 §13.2.2: If-Match (strong), else
// If-Unmodified-Since, may fail the request (412); then If-None-Match
// (weak), else If-Modified-Since, may make it a 304. It returns 0 to go on.
func preconditions(req *Request, etag string, lastModified time.Time) int {
	if im := req.get(HdrIfMatch); im != "" {
		if !matchETag(im, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := req.get(HdrIfUnmodifiedSince); ius != "" && !lastModified.IsZero() {
		if t, err := http.ParseTime(ius); err == nil && lastModified.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := req.get(HdrIfNoneMatch); inm != "" {
		if matchETag(inm, etag, true) {
			return http.StatusNotModified
		}
		return 0
	}
	if ims := req.get(HdrIfModifiedSince); ims != "" && !lastModified.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !lastModified.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// matchETag reports whether a list of entity tags (or "*") matches etag,
// with the weak comparison when weak, else the strong one (a weak tag
// matches nothing).
func matchETag(list, etag string, weak bool) bool {
	if strings.TrimSpace(list) == "*" {
		return etag != ""
	}
	if etag == "" {
		return false
	}
	if !weak && strings.HasPrefix(etag, "W/") {
		return false
	}
	for tag := range strings.SplitSeq(list, ",") {
		tag = strings.TrimSpace(tag)
		if weak {
			if strings.TrimPrefix(tag, "W/") == strings.TrimPrefix(etag, "W/") {
				return true
			}
		} else if tag == etag {
			return true
		}
	}
	return false
}

// ifRange reports whether a Range applies given If-Range: absent, a strong
// ETag that matches, or the exact Last-Modified date.
func ifRange(v, etag string, lastModified time.Time) bool {
	switch {
	case v == "":
		return true
	case strings.HasPrefix(v, `"`):
		return v == etag && !strings.HasPrefix(etag, "W/")
	case strings.HasPrefix(v, "W/"):
		return false
	}
	t, err := http.ParseTime(v)
	return err == nil && !lastModified.IsZero() && lastModified.Truncate(time.Second).Equal(t)
}

// parseRange parses a single byte range of a body of size n and returns
// [lo, hi). ok is false for a header it does not apply (lo ≥ 0: serve the
// whole body; several ranges, another unit, a malformed one) or one no byte
// satisfies (lo < 0: 416).
func parseRange(v string, n int64) (lo, hi int64, ok bool) {
	unit, spec, found := strings.Cut(v, "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false
	}
	if first == "" {
		// A suffix: the last N bytes; N = 0 is satisfied by no byte.
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k < 0 {
			return 0, 0, false
		}
		if k == 0 || n == 0 {
			return -1, 0, false
		}
		return max(0, n-k), n, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return 0, 0, false
	}
	b := n - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return 0, 0, false
		}
	}
	if a >= n {
		return -1, 0, false
	}
	return a, min(b, n-1) + 1, true
}

// accepts reports whether an Accept-Encoding value allows coding (RFC 9110
// §12.5.3: codings and q case-insensitive, q=0 refuses, "*" covers codings
// not named).
func accepts(ae, coding string) bool {
	star := -1.0
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0
				}
				q = f
			}
		}
		switch {
		case strings.EqualFold(name, coding) || (strings.EqualFold(coding, "gzip") && strings.EqualFold(name, "x-gzip")):
			return q > 0
		case name == "*":
			star = q
		}
	}
	return star > 0
}

// identityETag names the decoded representation of a tile stored with a
// content coding: a strong tag of its own.
func identityETag(etag string) string {
	weak := strings.HasPrefix(etag, "W/")
	inner := strings.TrimPrefix(etag, "W/")
	if len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"' {
		inner = inner[:len(inner)-1] + `-identity"`
	} else {
		inner = `"` + inner + `-identity"`
	}
	if weak {
		return "W/" + inner
	}
	return inner
}

// Bounds on decoding a stored gzip tile for a client without gzip (a tile
// is small; a gzip bomb is not a tile): at most maxDecoded bytes, and at
// most maxRatio times the stored size (but always 1 MiB).
const (
	maxDecoded  = 64 << 20
	maxRatio    = 100
	minDecodeOK = 1 << 20
)

// gunzip decodes b within the bounds, refusing up front what its trailer
// says would exceed them, so a bomb costs no memory.
func gunzip(b []byte) ([]byte, error) {
	limit := min(maxDecoded, max(minDecodeOK, maxRatio*len(b)))
	if n := len(b); n >= 4 {
		// ISIZE, the decoded size mod 2^32 (RFC 1952); it can lie, so the
		// reader below is bounded as well.
		isize := int(b[n-4]) | int(b[n-3])<<8 | int(b[n-2])<<16 | int(b[n-1])<<24
		if isize > limit {
			return nil, fmt.Errorf("%w: decodes to %d bytes, the limit for a %d-byte tile is %d", errTooLarge, isize, n, limit)
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: decodes past %d bytes", errTooLarge, limit)
	}
	return out, nil
}

var errTooLarge = errors.New("tileserver: decoded tile too large")

// appendHTTPDate appends t in the HTTP date format (http.TimeFormat,
// "Mon, 02 Jan 2006 15:04:05 GMT"). It is time.AppendFormat without the
// layout interpretation, which costs several times more.
func appendHTTPDate(b []byte, t time.Time) []byte {
	t = t.UTC()
	yy, mm, dd := t.Date()
	hh, mn, ss := t.Clock()
	if yy < 0 || yy > 9999 {
		return t.AppendFormat(b, http.TimeFormat)
	}
	const days, months = "SunMonTueWedThuFriSat", "JanFebMarAprMayJunJulAugSepOctNovDec"
	wd := int(t.Weekday()) * 3
	b = append(b, days[wd:wd+3]...)
	b = append(b, ", "...)
	b = append2(b, dd)
	b = append(b, ' ')
	b = append(b, months[(mm-1)*3:mm*3]...)
	b = append(b, ' ')
	b = append2(append2(b, yy/100), yy%100)
	b = append(b, ' ')
	b = append2(b, hh)
	b = append(b, ':')
	b = append2(b, mn)
	b = append(b, ':')
	b = append2(b, ss)
	return append(b, " GMT"...)
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// appendServerTiming names the tier that answered and how long the handler
// took, in milliseconds.
func appendServerTiming(b []byte, src source, d time.Duration) []byte {
	switch src {
	case srcMemory:
		b = append(b, "memory"...)
	case srcDisk:
		b = append(b, "disk"...)
	case srcRevalidated:
		b = append(b, "revalidate"...)
	case srcStale:
		b = append(b, "stale"...)
	default:
		b = append(b, "origin"...)
	}
	b = append(b, ";dur="...)
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 3, 64)
}

// answerStream answers with a tile too big for the memory tier, its body
// read from its disk file as it is sent (body), never whole: the same
// representations, conditionals and ranges as answerTile. A client without
// the stored coding gets the body decoded as it streams, without a
// Content-Length.
func (s *Server) answerStream(req *Request, resp *Response, key string, t *tile.Tile, body *disk.Body, start time.Time) {
	var stream io.ReadCloser = body
	closeIt := true
	defer func() {
		if closeIt {
			stream.Close()
		}
	}()
	size := body.Size()
	p := s.newPrepared(t)
	p.contentLength = []string{strconv.FormatInt(size, 10)}
	etag, encoding := p.etag, p.contentEncoding
	decoded, ok := s.mustDecode(req, resp, t, p)
	if !ok {
		return
	}
	if decoded {
		zr, err := decodeStream(t.ContentEncoding, body)
		if err != nil {
			s.log.Warn("stored "+codingName(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
			s.answerPlain(req, resp, http.StatusBadGateway, "stored tile is not valid "+codingName(t.ContentEncoding))
			return
		}
		stream = zr
		encoding = nil
		if t.ETag != "" {
			etag = []string{identityETag(t.ETag)}
		}
	}
	s.validatorFields(req, resp, p, etag, srcDisk, start)
	if s.conditionalAnswered(req, resp, p, etag, encoding, t.LastModified) {
		return
	}
	if !decoded {
		resp.set("Accept-Ranges", acceptRangesBytes)
	}
	if !decoded && req.Method == http.MethodGet && req.get(HdrRange) != "" && ifRange(req.get(HdrIfRange), firstOr(etag), t.LastModified) {
		lo, hi, ok := parseRange(req.get(HdrRange), size)
		switch {
		case ok:
			if _, err := body.Seek(lo, io.SeekStart); err != nil {
				s.answerPlain(req, resp, http.StatusInternalServerError, "disk read failed")
				return
			}
			resp.setString("Content-Range", "bytes "+strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi-1, 10)+"/"+strconv.FormatInt(size, 10))
			resp.setString("Content-Length", strconv.FormatInt(hi-lo, 10))
			resp.Status = http.StatusPartialContent
			stream = &decodedBody{r: io.LimitReader(body, hi-lo), c: body}
			closeIt, resp.Stream = false, stream
			return
		case lo < 0:
			resp.setString("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			s.answerPlain(req, resp, http.StatusRequestedRangeNotSatisfiable, "range not satisfiable")
			return
		}
	}
	if !decoded {
		resp.set("Content-Length", p.contentLength)
	}
	resp.Status = http.StatusOK
	if req.Method == http.MethodHead {
		return
	}
	closeIt, resp.Stream = false, stream
}

// decodedBody reads r and closes c: a decoded or limited view of a file.
// Reading past maxDecoded of a decoded body is an error (a gzip bomb).
type decodedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

func (d *decodedBody) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.n += int64(n)
	if d.n > maxDecoded {
		return n, errTooLarge
	}
	return n, err
}

func (d *decodedBody) Close() error { return d.c.Close() }
