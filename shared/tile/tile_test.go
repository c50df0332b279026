package tile

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var pathCases = []struct {
	in   string
	want string // "" means refused
}{
	{"/osm/1/0/0.png", "osm/1/0/0.png"},
	{"/iiif/img%20one/0,0,256,256/256,/0/default.jpg", "iiif/img one/0,0,256,256/256,/0/default.jpg"},
	{"/t/caf%C3%A9/1.pbf", "t/café/1.pbf"},
	{"/a+b/1.png", "a+b/1.png"},
	{"/", ""},
	{"", ""},
	{"osm/1/0/0.png", ""},
	{"/osm//1/0.png", ""},
	{"/osm/1/0/0.png/", ""},
	{"/../etc/passwd", ""},
	{"/osm/../../etc/passwd", ""},
	{"/osm/./1.png", ""},
	{"/osm/%2e%2e/secret", ""},
	{"/osm/%2E%2E/secret", ""},
	{"/osm%2f..%2fsecret", ""},
	{"/osm/%2Fetc", ""},
	{"/osm/%zz", ""},
	{"/osm/%", ""},
	{"/osm/%00.png", ""},
	{"/osm/a%0Ab.png", ""},
	{"/osm/..%5csecret", ""},
	{"/osm/\\..\\secret", ""},
	{"/osm/%ff%fe.png", ""},
	{"/" + strings.Repeat("a", MaxSegBytes+1), ""},
	{"/" + strings.Repeat("a/", MaxSegments) + "x", ""},
	{"/" + strings.Repeat("abcdefgh/", 101), ""},
	// The reserved key space, however it is spelled.
	{"/_tilesieve/journal/head.json", ""},
	{"/%5ftilesieve/journal/head.json", ""},
	{"/%5Ftilesieve/journal/head.json", ""},
	{"/%5f%74ilesieve/journal/head.json", ""},
	{"/_tilesieve/x", ""},
	{"/_tilesieve", "_tilesieve"},
	{"/_tilesieve.json", "_tilesieve.json"},
	{"/osm/_tilesieve/1.png", "osm/_tilesieve/1.png"},
}

func TestKeyFromPath(t *testing.T) {
	t.Parallel()
	for _, tc := range pathCases {
		got, err := KeyFromPath(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("KeyFromPath(%q) = %q, want an error", tc.in, got)
			} else if !errors.Is(err, ErrBadKey) {
				t.Errorf("KeyFromPath(%q): error %v is not ErrBadKey", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("KeyFromPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestReservedKeySpace: neither decoder gives a key under ReservedPrefix.
func TestReservedKeySpace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		decode func(string) (string, error)
		path   string
	}{
		{"escaped", KeyFromPath, "/_tilesieve/journal/head.json"},
		{"escaped", KeyFromPath, "/%5ftilesieve/journal/head.json"},
		{"unescaped", KeyFromUnescapedPath, "/_tilesieve/journal/head.json"},
		{"unescaped", KeyFromUnescapedPath, "/_tilesieve/purge"},
	} {
		t.Run(tc.name+tc.path, func(t *testing.T) {
			key, err := tc.decode(tc.path)
			if err == nil || !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "reserved") {
				t.Fatalf("got %q, %v; want a reserved-key error", key, err)
			}
		})
	}
}

func TestKeyFromObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prefix, obj, want string
		ok                bool
	}{
		{"tiles/", "tiles/osm/1/0/0.png", "osm/1/0/0.png", true},
		{"", "osm/1/0/0.png", "osm/1/0/0.png", true},
		{"tiles/", "other/osm/1.png", "", false},
		{"tiles/", "tiles/", "", false},
		{"tiles/", "tiles/a//b", "", false},
		{"", "_tilesieve/journal/entries/1.json", "_tilesieve/journal/entries/1.json", true},
	} {
		got, ok := KeyFromObject(tc.prefix, tc.obj)
		if got != tc.want || ok != tc.ok {
			t.Errorf("KeyFromObject(%q, %q) = %q, %v; want %q, %v", tc.prefix, tc.obj, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "osm/", "osm/1", "osm/12/2048/", "osm/1."} {
		if err := ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v, want ok", p, err)
		}
	}
	for _, p := range []string{"/", "osm//", "../", "osm/../", "a\x00"} {
		if err := ValidatePrefix(p); err == nil {
			t.Errorf("ValidatePrefix(%q) = nil, want an error", p)
		}
	}
}

func TestValidateDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"tiles/", true},
		{"maps/osm/", true},
		{"_tilesieve/journal/", true},
		{"", false},
		{"tiles", false},
		{"/tiles/", false},
		{"tiles//", false},
		{"../tiles/", false},
		{"a\\b/", false},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			t.Parallel()
			err := ValidateDir(tc.prefix)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadKey)) {
				t.Errorf("got %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// FuzzKeyFromPath checks that no accepted path can name anything but a plain
// relative key, and that accepting is stable: the key, escaped again as a
// path, is accepted as the same key.
func FuzzKeyFromPath(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := KeyFromPath(in)
		if err != nil {
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("error %v is not ErrBadKey", err)
			}
			return
		}
		if err := ValidateKey(key); err != nil {
			t.Fatalf("accepted %q as %q, which fails ValidateKey: %v", in, key, err)
		}
		for seg := range strings.SplitSeq(key, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", in, seg)
			}
		}
		if strings.ContainsAny(key, "\\\x00") || strings.HasPrefix(key, "/") || Reserved(key) {
			t.Fatalf("accepted %q as unsafe key %q", in, key)
		}
		again, err := KeyFromPath("/" + (&url.URL{Path: key}).EscapedPath())
		if err != nil || again != key {
			t.Fatalf("round trip of %q: got %q, %v", key, again, err)
		}
	})
}

func TestKeyFromPathAllocs(t *testing.T) {
	// The hit path parses every request's path: a plain one must not allocate.
	if n := testing.AllocsPerRun(100, func() { KeyFromPath("/osm/12/2048/1361.png") }); n != 0 {
		t.Fatalf("KeyFromPath allocated %v times per call, want 0", n)
	}
}

// FuzzValidateKey holds keyOK, the hit path's check, and explainKey, which
// says why a key is refused, to the same rules.
func FuzzValidateKey(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(strings.TrimPrefix(tc.in, "/"))
	}
	for _, k := range []string{
		"", "a", "a/b", "a//b", "./a", "a/..", "a/.../b", "a\\b", "a\x7fb", "a\x00", "é/ü", "\xff", "a/\xc3",
		strings.Repeat("s", MaxSegBytes), strings.Repeat("s", MaxSegBytes+1),
		strings.Repeat("a/", MaxSegments-1) + "a", strings.Repeat("a/", MaxSegments) + "a",
		strings.Repeat("k", MaxKeyBytes), strings.Repeat("k", MaxKeyBytes+1),
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ok, err := keyOK(key), explainKey(key)
		if ok != (err == nil) {
			t.Fatalf("key %q: keyOK %v, explainKey %v", key, ok, err)
		}
	})
}

// FuzzKeyFromUnescapedPath: a path net/http unescaped (URL.Path with no
// RawPath) gives the key its escaped form gives KeyFromPath, or is refused
// as that form is.
func FuzzKeyFromUnescapedPath(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(tc.in)
	}
	for _, p := range []string{"/a%2Fb", "/a%b", "/a?b", "/a b", "/ä/ö", "/\xff", "/a/../b", "//a", "/" + strings.Repeat("k", MaxKeyBytes+1)} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		u := &url.URL{Path: path}
		want, wantErr := KeyFromPath(u.EscapedPath())
		got, err := KeyFromUnescapedPath(path)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Fatalf("path %q: KeyFromUnescapedPath %q, %v; KeyFromPath(%q) %q, %v", path, got, err, u.EscapedPath(), want, wantErr)
		}
		if err != nil && !errors.Is(err, ErrBadKey) {
			t.Fatalf("path %q: error %v is not ErrBadKey", path, err)
		}
	})
}
