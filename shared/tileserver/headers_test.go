package tileserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"": false, "gzip": true, "br, gzip": true, "GZIP;q=0.5": true, "gzip;q=0": false, "gzip; q=0": false,
		"*": true, "identity": false, "br": false, "x-gzip": true, "deflate, gzip;q=1.0, *;q=0.5": true,
	} {
		if got := acceptsGzip(in); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestDirectiveSeconds(t *testing.T) {
	t.Parallel()
	cc := "public, max-age=86400, stale-while-revalidate=60, stale-if-error=86400"
	if got := directiveSeconds(cc, "stale-if-error"); got != 24*time.Hour {
		t.Fatalf("got %v", got)
	}
	if got := directiveSeconds("public, stale-if-error=-5", "stale-if-error"); got != 0 {
		t.Fatalf("negative: got %v", got)
	}
}

// FuzzConditionalHeaders feeds client-controlled header values through the
// handler's own parsers: they must never panic, and a tile is only "not
// modified" for a request that named its ETag, *, or a date not before it.
func FuzzConditionalHeaders(f *testing.F) {
	f.Add("gzip, br", `"abc"`, "Mon, 02 Jan 2006 15:04:05 GMT", `"abc"`)
	f.Add("gzip;q=0,*;q=1", `W/"abc", "x"`, "", `"abc"`)
	f.Add(";;;q=", "*", "garbage", "")
	f.Add("gzip;q=1e999", `"`, "Mon, 02 Jan 2006 15:04:05 GMT", `W/"`)
	f.Fuzz(func(t *testing.T, ae, inm, ims, etag string) {
		acceptsGzip(ae)
		directiveSeconds(ae, "max-age")
		r := httptest.NewRequest("GET", "/a/b.png", nil)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		if ims != "" {
			r.Header.Set("If-Modified-Since", ims)
		}
		lm := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if notModified(r, etag, lm) && inm == "" && ims == "" {
			t.Fatal("not modified without a condition")
		}
	})
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
		if got, want := string(appendHTTPDate(nil, tm)), tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("appendHTTPDate(%v) = %q, want %q", tm, got, want)
		}
	}
}
