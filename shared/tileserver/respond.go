package tileserver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// writeTile answers with t and returns the status it wrote.
//
// This is the hit path, so it is written for allocations: the header values
// of one response share one backing array, and the formatted ones
// (Last-Modified, Content-Length, Server-Timing) one string, so a hit costs
// two allocations however many headers it sends. Each value slice is
// capped at its length, so a later Header().Add copies instead of writing
// into its neighbour.
func (s *Server) writeTile(w http.ResponseWriter, r *http.Request, t *tile.Tile, src source, start time.Time) int {
	body, etag := t.Body, t.ETag
	encoding := t.ContentEncoding
	if encoding == "gzip" && !acceptsGzip(headerValue(r.Header, "Accept-Encoding")) {
		// The client cannot take gzip: decode, and name the decoded
		// representation with a weak ETag of its own.
		decoded, err := gunzip(t.Body)
		if err != nil {
			s.log.Warn("stored gzip tile does not decode", "etag", t.ETag, "err", err)
			s.plain(w, http.StatusBadGateway, "stored tile is not valid gzip")
			return http.StatusBadGateway
		}
		body, etag, encoding = decoded, weakETag(t.ETag), ""
	}

	var buf [96]byte
	b := buf[:0]
	if !t.LastModified.IsZero() {
		b = appendHTTPDate(b, t.LastModified)
	}
	lmEnd := len(b)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	clEnd := len(b)
	b = appendServerTiming(b, src, time.Since(start))
	formatted := string(b)

	hs := headerSetter{h: w.Header(), vals: make([]string, 0, 10)}
	if t.ContentEncoding == "gzip" {
		hs.set("Vary", "Accept-Encoding")
	}
	if encoding != "" {
		hs.set("Content-Encoding", encoding)
	}
	hs.set("Content-Type", t.ContentType)
	if etag != "" {
		hs.set("Etag", etag)
	}
	if lmEnd > 0 {
		hs.set("Last-Modified", formatted[:lmEnd])
	}
	hs.set("Cache-Control", s.cfg.CacheControl)
	hs.set("X-Cache", src.String())
	hs.set("Server-Timing", formatted[clEnd:])
	hs.set("Accept-Ranges", "bytes")

	if headerValue(r.Header, "Range") != "" {
		// ServeContent does ranges (and If-Range) by the book; it reads the
		// ETag and Last-Modified set above for its conditionals.
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		http.ServeContent(rec, r, "", t.LastModified, bytes.NewReader(body))
		return rec.status
	}
	if notModified(r, etag, t.LastModified) {
		delete(hs.h, "Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	hs.set("Content-Length", formatted[lmEnd:clEnd])
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return http.StatusOK
}

// headerSetter sets header values as capped slices of one backing array.
type headerSetter struct {
	h    http.Header
	vals []string
}

func (hs *headerSetter) set(key, value string) {
	hs.vals = append(hs.vals, value)
	n := len(hs.vals)
	hs.h[key] = hs.vals[n-1 : n : n]
}

// writeMissing answers for a tile the origin does not have; src says
// whether the origin said so now (MISS) or a remembered 404 did (HIT-MEMORY).
func (s *Server) writeMissing(w http.ResponseWriter, r *http.Request, key string, src source) int {
	h := w.Header()
	h.Set("Cache-Control", s.cfg.NegativeCacheControl)
	h.Set("X-Cache", src.String())
	switch s.cfg.MissingTile {
	case "204":
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	case "empty":
		if e, ok := s.empty[strings.ToLower(path.Ext(key))]; ok {
			h.Set("Content-Type", e.contentType)
			h.Set("Content-Length", strconv.Itoa(len(e.body)))
			w.WriteHeader(http.StatusOK)
			if r.Method != http.MethodHead {
				w.Write(e.body)
			}
			return http.StatusOK
		}
	}
	s.plain(w, http.StatusNotFound, "tile not found")
	return http.StatusNotFound
}

// plain writes a short text answer.
func (s *Server) plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)+1))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

// notModified applies If-None-Match (weak comparison, as GET allows) and,
// when that is absent, If-Modified-Since.
func notModified(r *http.Request, etag string, lastModified time.Time) bool {
	if inm := headerValue(r.Header, "If-None-Match"); inm != "" {
		if etag == "" {
			return false
		}
		for tag := range strings.SplitSeq(inm, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == strings.TrimPrefix(etag, "W/") {
				return true
			}
		}
		return false
	}
	if ims := headerValue(r.Header, "If-Modified-Since"); ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.Truncate(time.Second).After(t)
	}
	return false
}

// headerValue is h.Get(key) for a key already in canonical form, without
// canonicalising it again on every request (both net/http and the Lambda
// adapters store request headers under canonical keys).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip.
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && !strings.EqualFold(coding, "x-gzip") && coding != "*" {
			continue
		}
		q := strings.TrimSpace(params)
		if v, ok := strings.CutPrefix(q, "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f == 0 {
				return false
			}
		}
		return true
	}
	return false
}

func weakETag(etag string) string {
	if etag == "" || strings.HasPrefix(etag, "W/") {
		return etag
	}
	return "W/" + etag
}

// maxDecoded bounds what a stored gzip tile may expand to (a tile is small;
// a gzip bomb is not a tile).
const maxDecoded = 64 << 20

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecoded {
		return nil, errTooLarge
	}
	return out, nil
}

var errTooLarge = errors.New("tileserver: decoded tile too large")

// appendHTTPDate appends t in the HTTP date format (http.TimeFormat,
// "Mon, 02 Jan 2006 15:04:05 GMT"). It is time.AppendFormat without the
// layout interpretation, which costs several times more on every hit.
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

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
