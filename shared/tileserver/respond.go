package tileserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tile/coding"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/timing"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/variant"
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

// ExposeHeaders is the Access-Control-Expose-Headers value of tile answers
// to cross-origin requests.
const ExposeHeaders = "ETag, Content-Length, Content-Range, X-Cache, Server-Timing, " + CostHeader

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
	exposeHeaders     = []string{ExposeHeaders}
	allowMethods      = []string{"GET, HEAD, OPTIONS"}
	preflightMaxAge   = []string{"86400"}
)

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
		if v.Err != nil {
			msg := "stored tile is not valid " + variant.Name(t.ContentEncoding)
			if errors.Is(v.Err, variant.ErrTooLarge) {
				msg = "stored tile decodes past the limit; ask for it with Accept-Encoding: " + variant.Name(t.ContentEncoding)
			}
			s.answerPlain(req, resp, http.StatusBadGateway, msg)
			return
		}
		body, encoding, stored = v.Body, nil, false
		if v.Body == nil {
			streamed = v.Size
		}
		if t.ETag != "" {
			// The decoded representation is another one: its own strong
			// ETag, so no conditional request confuses the two.
			etag = []string{variant.ETag(t.ETag)}
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
	if req.Method == http.MethodGet && req.get(HdrRange) != "" && httpspec.IfRange(req.get(HdrIfRange), firstOr(etag), t.LastModified) {
		if lo, hi, ok := httpspec.ParseRange(req.get(HdrRange), int64(len(body))); ok {
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
	if stored && src == srcMemory {
		resp.extra = p.extra
	}
}

// variantOf is t's decoded variant: from the memory tier or one shared
// decode, except for a document rendered for this request (its body is not
// the stored tile's), which is small and decoded here.
func (s *Server) variantOf(key string, t *tile.Tile) variant.Variant {
	if tileJSON, info := docs.Kind(key, t); !tileJSON && !info {
		return s.variants.Of(key, t)
	}
	return s.variants.Decode(key, t)
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
	zr, err := variant.Stream(t.ContentEncoding, io.NopCloser(bytes.NewReader(t.Body)))
	if err != nil {
		// It decoded a moment ago; only a broken decoder gets here.
		s.log.Warn("stored "+variant.Name(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
		resp.reset()
		s.answerPlain(req, resp, http.StatusBadGateway, "stored tile is not valid "+variant.Name(t.ContentEncoding))
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
	if p.hit == nil || src == srcStale || (s.cors.Reflect && req.get(HdrOrigin) != "") ||
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
	if src == srcMemory {
		resp.extra = p.extra
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
	if t.ContentEncoding == "" || httpspec.Accepts(req.get(HdrAcceptEncoding), t.ContentEncoding) {
		return false, true
	}
	if !coding.Decodable(t.ContentEncoding) {
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
	switch status := httpspec.Preconditions(req.conditions(), firstOr(etag), lastModified); status {
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
	v := timing.Value(src, resp.elapsed)
	resp.timing = v[0]
	resp.set("Server-Timing", v)
}

// Timing is the answer's Server-Timing value, or "".
func (r *Response) Timing() string { return r.timing }

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
			resp.setString("Content-Type", e.ContentType)
			resp.setString("Content-Length", strconv.Itoa(len(e.Body)))
			resp.Status = http.StatusOK
			if req.Method != http.MethodHead {
				resp.Body = e.Body
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
		zr, err := variant.Stream(t.ContentEncoding, body)
		if err != nil {
			s.log.Warn("stored "+variant.Name(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
			s.answerPlain(req, resp, http.StatusBadGateway, "stored tile is not valid "+variant.Name(t.ContentEncoding))
			return
		}
		stream = zr
		encoding = nil
		if t.ETag != "" {
			etag = []string{variant.ETag(t.ETag)}
		}
	}
	s.validatorFields(req, resp, p, etag, srcDisk, start)
	if s.conditionalAnswered(req, resp, p, etag, encoding, t.LastModified) {
		return
	}
	if !decoded {
		resp.set("Accept-Ranges", acceptRangesBytes)
	}
	if !decoded && req.Method == http.MethodGet && req.get(HdrRange) != "" && httpspec.IfRange(req.get(HdrIfRange), firstOr(etag), t.LastModified) {
		lo, hi, ok := httpspec.ParseRange(req.get(HdrRange), size)
		switch {
		case ok:
			if _, err := body.Seek(lo, io.SeekStart); err != nil {
				s.answerPlain(req, resp, http.StatusInternalServerError, "disk read failed")
				return
			}
			resp.setString("Content-Range", "bytes "+strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi-1, 10)+"/"+strconv.FormatInt(size, 10))
			resp.setString("Content-Length", strconv.FormatInt(hi-lo, 10))
			resp.Status = http.StatusPartialContent
			stream = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(body, hi-lo), body}
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
