// Package httpspec holds the parts of RFC 9110 a tile answer applies, as
// pure functions of header values: conditional requests, ranges,
// Accept-Encoding and the HTTP date, each without allocating on the paths a
// tile answer takes.
package httpspec

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
)

// Conditions are a request's conditional header values ("" when absent).
type Conditions struct {
	IfMatch, IfNoneMatch, IfModifiedSince, IfUnmodifiedSince string
}

// Preconditions applies RFC 9110 §13.2.2: If-Match (strong), else
// If-Unmodified-Since, may fail the request (412); then If-None-Match
// (weak), else If-Modified-Since, may make it a 304. It returns 0 to go on.
func Preconditions(c Conditions, etag string, lastModified time.Time) int {
	if im := c.IfMatch; im != "" {
		if !MatchETag(im, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := c.IfUnmodifiedSince; ius != "" && !lastModified.IsZero() {
		if t, err := http.ParseTime(ius); err == nil && lastModified.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := c.IfNoneMatch; inm != "" {
		if MatchETag(inm, etag, true) {
			return http.StatusNotModified
		}
		return 0
	}
	if ims := c.IfModifiedSince; ims != "" && !lastModified.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !lastModified.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// MatchETag reports whether a list of entity tags (or "*") matches etag,
// with the weak comparison when weak, else the strong one (a weak tag
// matches nothing).
func MatchETag(list, etag string, weak bool) bool {
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

// IfRange reports whether a Range applies given If-Range: absent, a strong
// ETag that matches, or the exact Last-Modified date.
func IfRange(v, etag string, lastModified time.Time) bool {
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

// ParseRange parses a single byte range of a body of size n and returns
// [lo, hi). ok is false for a header it does not apply (lo ≥ 0: serve the
// whole body; several ranges, another unit, a malformed one) or one no byte
// satisfies (lo < 0: 416).
func ParseRange(v string, n int64) (lo, hi int64, ok bool) {
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

// Accepts reports whether an Accept-Encoding value allows coding (RFC 9110
// §12.5.3: codings and q case-insensitive, q=0 refuses, "*" covers codings
// not named).
func Accepts(ae, coding string) bool {
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

// AppendDate appends t in the HTTP date format (http.TimeFormat,
// "Mon, 02 Jan 2006 15:04:05 GMT"). It is time.AppendFormat without the
// layout interpretation, which costs several times more.
func AppendDate(b []byte, t time.Time) []byte {
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

// TokenList reports whether v is a comma-separated list of header names.
func TokenList(v string) bool {
	if len(v) > 512 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c == ',' || c == ' ' || c == '-' || c == '_' || c == '.' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// CORS is CORS_ALLOW_ORIGINS: "*" (any origin), "none", or a list of
// origins that are reflected, with Vary: Origin so a CDN keeps them apart.
// The admin API never answers cross-origin.
type CORS struct {
	Any     bool
	Reflect bool
	Origins map[string]bool
}

// ParseCORS parses CORS_ALLOW_ORIGINS.
func ParseCORS(v string) (CORS, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "", "*":
		return CORS{Any: true}, nil
	case "none":
		return CORS{}, nil
	}
	p := CORS{Reflect: true, Origins: map[string]bool{}}
	for o := range strings.SplitSeq(v, ",") {
		o = strings.TrimSpace(o)
		// An origin is scheme://host[:port]: nothing after the host.
		if u, ok := httpurl.Parse(o); !ok || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
			return CORS{}, fmt.Errorf("tileserver: CORS origin %q: want scheme://host[:port], or * or none", o)
		}
		p.Origins[o] = true
	}
	return p, nil
}
