package tileserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const bearer = "Bearer test-admin-token"

// TestAdminPurgeNeedsPrefixOrAll: a purge without a prefix would empty every
// tier of every instance and the CDN; it has to be asked for with all=true.
func TestAdminPurgeNeedsPrefixOrAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := []string{"a/1/1/1.png", "b/1/1/1.png"}
	for _, k := range keys {
		e.put(k, []byte(k), "image/png", "")
		expect(t, e.do("GET", "/"+k), 200, "MISS")
	}

	for _, tc := range []struct{ method, path string }{
		{"POST", "/_tilesieve/purge"},
		{"POST", "/_tilesieve/purge?prefix="},
		{"POST", "/_tilesieve/purge?prefix=a/&all=true"},
		{"POST", "/_tilesieve/purge?prefix=a/&prefix=b/"},
		{"POST", "/_tilesieve/purge?all=yes"},
		{"POST", "/_tilesieve/purge?all=false"},
		{"DELETE", "/_tilesieve/cache/"},
		{"DELETE", "/_tilesieve/cache/a/?all=true"},
	} {
		r := e.do(tc.method, tc.path, "Authorization", bearer)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: got %d, want 400", tc.method, tc.path, r.StatusCode)
		}
	}
	// None of the refused requests purged anything or wrote the journal.
	for _, k := range keys {
		expect(t, e.do("GET", "/"+k), 200, "HIT-MEMORY")
	}
	if head, err := e.journal.Head(context.Background()); err != nil || head != 0 {
		t.Fatalf("journal after refused purges: head %d %v, want no entries", head, err)
	}

	for _, path := range []string{"/_tilesieve/purge?all=true", "/_tilesieve/cache/?all=true"} {
		method := "POST"
		if strings.HasPrefix(path, "/_tilesieve/cache/") {
			method = "DELETE"
		}
		r := e.do(method, path, "Authorization", bearer)
		expect(t, r, 200, "")
		var res struct{ Prefix string }
		if err := json.NewDecoder(r.Body).Decode(&res); err != nil || res.Prefix != "" {
			t.Fatalf("%s %s: %+v %v, want a purge of everything", method, path, res, err)
		}
		for _, k := range keys {
			expect(t, e.do("GET", "/"+k), 200, "MISS")
		}
	}
	snap, err := e.journal.Read(context.Background(), "")
	entries := snap.Entries
	if err != nil || len(entries) != 2 || entries[0].Prefixes[0] != "" {
		t.Fatalf("journal: %+v %v, want two purges of everything", entries, err)
	}
}

// TestAdminAuthorizationScheme: Authorization carries a scheme (RFC 9110
// §11.6.2, compared case-insensitively); a bare token is not a Bearer token.
func TestAdminAuthorizationScheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		value string
		want  int
	}{
		{"test-admin-token", 401},
		{"Basic test-admin-token", 401},
		{"Bearer", 401},
		{"Bearer ", 401},
		{"Bearertest-admin-token", 401},
		{"Bearer test-admin-token", 200},
		{"bearer test-admin-token", 200},
		{"BEARER test-admin-token", 200},
		{"Bearer   test-admin-token", 200},
		{"Bearer wrong", 403},
	} {
		r := e.do("GET", "/_tilesieve/stats", "Authorization", tc.value)
		if r.StatusCode != tc.want {
			t.Errorf("Authorization %q: got %d, want %d", tc.value, r.StatusCode, tc.want)
		}
		if tc.want == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("Authorization %q: 401 without a Bearer challenge (WWW-Authenticate %q)", tc.value, r.Header.Get("WWW-Authenticate"))
		}
	}
}

// TestAdmin405CarriesAllow: RFC 9110 §15.5.6, a 405 lists what the resource
// accepts, and each listed method is then not refused.
func TestAdmin405CarriesAllow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/_tilesieve/purge?prefix=a/"},
		{"PUT", "/_tilesieve/purge?prefix=a/"},
		{"GET", "/_tilesieve/cache/a/"},
		{"POST", "/_tilesieve/keys?prefix=a/"},
		{"DELETE", "/_tilesieve/stats"},
		{"POST", "/_tilesieve/health"},
	} {
		r := e.do(tc.method, tc.path, "Authorization", bearer)
		if r.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: got %d, want 405", tc.method, tc.path, r.StatusCode)
			continue
		}
		allow := r.Header.Get("Allow")
		if allow == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
			continue
		}
		for m := range strings.SplitSeq(allow, ",") {
			m = strings.TrimSpace(m)
			if got := e.do(m, tc.path, "Authorization", bearer); got.StatusCode == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: Allow %q lists %s, which is refused too", tc.method, tc.path, allow, m)
			}
		}
	}
}

// TestAdminKeysMarksRemembered404s: a remembered 404 is a memory entry with
// no body; the listing says which entries are such, so an operator does not
// take them for empty tiles.
func TestAdminKeysMarksRemembered404s(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put("a/1/1/1.png", []byte("tile"), "image/png", "")
	expect(t, e.do("GET", "/a/1/1/1.png"), 200, "MISS")
	expect(t, e.do("GET", "/a/1/1/2.png"), 404, "")
	expect(t, e.do("GET", "/a/1/1/2.png"), 404, "HIT-MEMORY") // remembered

	r := e.do("GET", "/_tilesieve/keys?prefix=a/", "Authorization", bearer)
	expect(t, r, 200, "")
	got := map[string]bool{} // tier + " " + key -> missing
	for line := range strings.SplitSeq(strings.TrimSpace(body(t, r)), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		missing, ok := l["missing"].(bool)
		if !ok {
			t.Fatalf("line %q has no boolean \"missing\" field", line)
		}
		got[l["tier"].(string)+" "+l["key"].(string)] = missing
	}
	want := map[string]bool{
		"memory a/1/1/1.png": false,
		"memory a/1/1/2.png": true,
		"disk a/1/1/1.png":   false,
	}
	if len(got) != len(want) {
		t.Fatalf("listing: got %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: missing=%v (listed %v), want %v", k, g, ok, w)
		}
	}
}
