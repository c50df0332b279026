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
func (s *Server) writeTile(w http.ResponseWriter, r *http.Request, t *tile.Tile, src source, start time.Time) int {
	h := w.Header()
	body, etag := t.Body, t.ETag
	switch {
	case t.ContentEncoding == "gzip":
		h["Vary"] = []string{"Accept-Encoding"}
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h["Content-Encoding"] = []string{"gzip"}
			break
		}
		// The client cannot take gzip: decode, and name the decoded
		// representation with a weak ETag of its own.
		decoded, err := gunzip(t.Body)
		if err != nil {
			s.log.Warn("stored gzip tile does not decode", "etag", t.ETag, "err", err)
			s.plain(w, http.StatusBadGateway, "stored tile is not valid gzip")
			return http.StatusBadGateway
		}
		body, etag = decoded, weakETag(t.ETag)
	case t.ContentEncoding != "":
		h["Content-Encoding"] = []string{t.ContentEncoding}
	}
	h["Content-Type"] = []string{t.ContentType}
	if etag != "" {
		h["Etag"] = []string{etag}
	}
	if !t.LastModified.IsZero() {
		h["Last-Modified"] = []string{t.LastModified.UTC().Format(http.TimeFormat)}
	}
	h["Cache-Control"] = []string{s.cfg.CacheControl}
	h["X-Cache"] = []string{src.String()}
	h["Server-Timing"] = []string{serverTiming(src, time.Since(start))}
	h["Accept-Ranges"] = []string{"bytes"}

	if r.Header.Get("Range") != "" {
		// ServeContent does ranges (and If-Range) by the book; it reads the
		// ETag and Last-Modified set above for its conditionals.
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		http.ServeContent(rec, r, "", t.LastModified, bytes.NewReader(body))
		return rec.status
	}
	if notModified(r, etag, t.LastModified) {
		delete(h, "Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return http.StatusOK
}

// writeMissing answers for a tile the origin does not have.
func (s *Server) writeMissing(w http.ResponseWriter, r *http.Request, key string) int {
	h := w.Header()
	h.Set("Cache-Control", s.cfg.NegativeCacheControl)
	h.Set("X-Cache", srcOrigin.String())
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
	if inm := r.Header.Get("If-None-Match"); inm != "" {
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
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.Truncate(time.Second).After(t)
	}
	return false
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

// serverTiming names the tier that answered and how long the handler took.
func serverTiming(src source, d time.Duration) string {
	var name string
	switch src {
	case srcMemory:
		name = "memory"
	case srcDisk:
		name = "disk"
	case srcRevalidated:
		name = "revalidate"
	case srcStale:
		name = "stale"
	default:
		name = "origin"
	}
	buf := make([]byte, 0, 32)
	buf = append(buf, name...)
	buf = append(buf, ";dur="...)
	buf = strconv.AppendFloat(buf, float64(d.Microseconds())/1000, 'f', 3, 64)
	return string(buf)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
