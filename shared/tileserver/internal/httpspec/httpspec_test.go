package httpspec

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ae, coding string
		want       bool
	}{
		{"", "gzip", false}, {"gzip", "gzip", true}, {"br, gzip", "gzip", true}, {"GZIP;q=0.5", "gzip", true},
		{"gzip;q=0", "gzip", false}, {"gzip; q=0", "gzip", false}, {"gzip;Q=0", "gzip", false},
		{"gzip;q=0;foo=1", "gzip", false}, {"gzip;foo=1;q=0", "gzip", false}, {"*;q=0, gzip", "gzip", true},
		{"*", "gzip", true}, {"*;q=0", "gzip", false}, {"identity", "gzip", false}, {"br", "gzip", false},
		{"x-gzip", "gzip", true}, {"deflate, gzip;q=1.0, *;q=0.5", "gzip", true}, {"gzip;q=0, *", "gzip", false},
		{"br", "br", true}, {"gzip", "br", false}, {"*", "br", true}, {"BR;q=0.1", "br", true}, {"gzip;q=nonsense", "gzip", false},
	} {
		if got := Accepts(tc.ae, tc.coding); got != tc.want {
			t.Errorf("Accepts(%q, %q) = %v, want %v", tc.ae, tc.coding, got, tc.want)
		}
	}
}

func TestParseRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      string
		n      int64
		lo, hi int64
		ok     bool
	}{
		{"bytes=0-0", 100, 0, 1, true}, {"bytes=10-19", 100, 10, 20, true}, {"bytes=90-", 100, 90, 100, true},
		{"bytes=90-500", 100, 90, 100, true}, {"bytes=-10", 100, 90, 100, true}, {"bytes=-500", 100, 0, 100, true},
		{"bytes=-0", 100, -1, 0, false}, {"bytes=100-", 100, -1, 0, false}, {"bytes=100-200", 100, -1, 0, false},
		{"bytes=0-", 0, -1, 0, false}, {"BYTES=1-2", 100, 1, 3, true},
		// Not applied: the whole body.
		{"bytes=5-1", 100, 0, 0, false}, {"bytes=0-1,5-6", 100, 0, 0, false}, {"items=0-1", 100, 0, 0, false},
		{"bytes=x-1", 100, 0, 0, false}, {"bytes", 100, 0, 0, false},
	} {
		lo, hi, ok := ParseRange(tc.v, tc.n)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("ParseRange(%q, %d) = %d, %d, %v; want %d, %d, %v", tc.v, tc.n, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// FuzzConditionalHeaders feeds client-controlled header values through the
// handler's parsers and checks every answer of preconditions against a small
// reference model of RFC 9110 §13.2.2, written the plain way.
func FuzzConditionalHeaders(f *testing.F) {
	f.Add("gzip, br", `"abc"`, "Mon, 02 Jan 2006 15:04:05 GMT", `"abc"`, "", "")
	f.Add("gzip;q=0,*;q=1", `W/"abc", "x"`, "", `"abc"`, `"abc"`, "")
	f.Add(";;;q=", "*", "garbage", "", "*", "Thu, 01 Jan 2026 00:00:00 GMT")
	f.Add("gzip;q=1e999", `"`, "Mon, 02 Jan 2006 15:04:05 GMT", `W/"`, `W/"abc"`, "Wed, 31 Dec 2025 00:00:00 GMT")
	f.Add("", "", "Thu, 01 Jan 2026 00:00:00 GMT", `"abc"`, "", "Thu, 01 Jan 2026 00:00:00 GMT")
	f.Fuzz(func(t *testing.T, ae, inm, ims, etag, im, ius string) {
		Accepts(ae, "gzip")
		ParseRange(ae, 1000)
		lm := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		c := Conditions{IfNoneMatch: inm, IfModifiedSince: ims, IfMatch: im, IfUnmodifiedSince: ius}
		if got, want := Preconditions(c, etag, lm), modelPreconditions(inm, ims, im, ius, etag, lm); got != want {
			t.Fatalf("preconditions(INM %q, IMS %q, IM %q, IUS %q; etag %q) = %d, want %d", inm, ims, im, ius, etag, got, want)
		}
	})
}

// modelPreconditions is RFC 9110 §13.2.2 for GET, step by step.
func modelPreconditions(inm, ims, im, ius, etag string, lm time.Time) int {
	tags := func(list string) (all bool, ts []string) {
		for _, p := range strings.Split(list, ",") {
			p = strings.TrimSpace(p)
			if p == "*" && strings.TrimSpace(list) == "*" {
				return true, nil
			}
			ts = append(ts, p)
		}
		return false, ts
	}
	opaque := func(tag string) string { return strings.TrimPrefix(tag, "W/") }
	// Step 1: If-Match, strong comparison.
	if im != "" {
		all, ts := tags(im)
		ok := all && etag != ""
		for _, tg := range ts {
			if etag != "" && !strings.HasPrefix(etag, "W/") && tg == etag {
				ok = true
			}
		}
		if !ok {
			return 412
		}
	} else if ius != "" {
		// Step 2: If-Unmodified-Since, only without If-Match.
		if d, err := http.ParseTime(ius); err == nil && lm.After(d) {
			return 412
		}
	}
	// Step 3: If-None-Match, weak comparison.
	if inm != "" {
		all, ts := tags(inm)
		if all && etag != "" {
			return 304
		}
		for _, tg := range ts {
			if etag != "" && opaque(tg) == opaque(etag) {
				return 304
			}
		}
		return 0
	}
	// Step 4: If-Modified-Since, only without If-None-Match.
	if ims != "" {
		if d, err := http.ParseTime(ims); err == nil && !lm.After(d) {
			return 304
		}
	}
	return 0
}

func TestAppendHTTPDate(t *testing.T) {
	t.Parallel()
	for _, tm := range []time.Time{
		time.Date(2026, 11, 30, 9, 5, 7, 999, time.UTC),
		time.Date(1999, 1, 1, 0, 0, 0, 0, time.FixedZone("x", -7*3600)),
		time.Date(2004, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(12000, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Unix(0, 0),
	} {
		if got, want := string(AppendDate(nil, tm)), tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("AppendDate(%v) = %q, want %q", tm, got, want)
		}
	}
}
