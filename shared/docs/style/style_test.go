package style_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/docs/style"
)

const base = "https://d1.cloudfront.net"

// TestRewriteStyle rewrites whole styles from testdata: absolute URLs of
// another host onto the base, and relative and root-relative ones resolved
// against the style's own URL; nothing else in the document changes.
func TestRewriteStyle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file, base, tileset string
		replace             []string // old, new pairs: the input with these replaced is the output
	}{
		{"osm-style.json", base + "/", "osm", []string{
			`"http://127.0.0.1:8080/osm.json"`, `"` + base + `/osm.json"`,
			`"http://127.0.0.1:8080/osm/hillshade/{z}/{x}/{y}.png"`, `"` + base + `/osm/hillshade/{z}/{x}/{y}.png"`,
			`"http://127.0.0.1:8080/osm/sprite"`, `"` + base + `/osm/sprite"`,
			`"http://127.0.0.1:8080/osm/fonts/{fontstack}/{range}.pbf"`, `"` + base + `/osm/fonts/{fontstack}/{range}.pbf"`,
		}},
		{"relative-style.json", base, "maps/osm", []string{
			`"../osm.json"`, `"` + base + `/maps/osm.json"`,
			`"/roads.json"`, `"` + base + `/roads.json"`,
			`"url":"sprite"`, `"url":"` + base + `/maps/osm/sprite"`,
			`"fonts/{fontstack}/{range}.pbf"`, `"` + base + `/maps/osm/fonts/{fontstack}/{range}.pbf"`,
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := style.Rewrite(in, c.base, c.tileset)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.NewReplacer(c.replace...).Replace(string(in)); string(got) != want {
				t.Errorf("got %s\nwant %s", got, want)
			}
		})
	}
}

// TestRewriteURL holds each kind of URL to the documented rule, through a
// style whose sprite is the URL.
func TestRewriteURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, base, tileset, in, want string
	}{
		{"relative", base, "osm", "sprite", base + "/osm/sprite"},
		{"relative in a nested tileset", base, "maps/osm", "img/sprite", base + "/maps/osm/img/sprite"},
		{"dot segments", base, "osm", "./a/../sprite", base + "/osm/sprite"},
		{"parent", base, "maps/osm", "../shared/sprite", base + "/maps/shared/sprite"},
		{"never above the base", base, "osm", "../../../x", base + "/x"},
		{"trailing parent keeps the slash", base, "osm", "a/..", base + "/osm/"},
		{"root relative is a key", base, "osm", "/fonts/{fontstack}/{range}.pbf", base + "/fonts/{fontstack}/{range}.pbf"},
		{"query and fragment kept", base, "osm", "sprite?v=2#x", base + "/osm/sprite?v=2#x"},
		{"absolute under the tileset", base, "osm", "http://localhost:8080/osm/sprite", base + "/osm/sprite"},
		{"absolute TileJSON", base, "osm", "https://old.example.org/osm.json?x=1", base + "/osm.json?x=1"},
		{"absolute nested tileset", base, "maps/osm", "https://old/maps/osm/sprite", base + "/maps/osm/sprite"},
		{"relative in a tileset with a space", base, "my maps", "sprite", base + "/my%20maps/sprite"},
		{"absolute escaped name", base, "my maps", "https://old/my%20maps/sprite", base + "/my%20maps/sprite"},
		{"scheme relative", base, "osm", "//old.example.org/osm/sprite", base + "/osm/sprite"},
		{"uppercase scheme", base, "osm", "HTTP://old/osm/sprite", base + "/osm/sprite"},
		{"absolute dot segments", base, "osm", "https://old/x/../osm/sprite", base + "/osm/sprite"},
		{"base with a path", base + "/stage", "osm", "https://old/osm/sprite", base + "/stage/osm/sprite"},
		{"already under a base with a path", base + "/osm", "osm", base + "/osm/osm/sprite", base + "/osm/osm/sprite"},
		{"other tileset on another host", base, "osm", "https://old/roads/sprite", "https://old/roads/sprite"},
		{"tileset name deeper in the path", base, "osm", "https://api.example.com/v3/osm/sprite", "https://api.example.com/v3/osm/sprite"},
		{"name prefix is not the name", base, "osm", "https://old/osm2/sprite", "https://old/osm2/sprite"},
		{"the tileset directory alone", base, "osm", "https://old/osm", "https://old/osm"},
		{"host only", base, "osm", "https://old", "https://old"},
		{"mapbox", base, "osm", "mapbox://sprites/mapbox/bright-v8", "mapbox://sprites/mapbox/bright-v8"},
		{"other scheme", base, "osm", "asset://osm/sprite", "asset://osm/sprite"},
		{"opaque http", base, "osm", "http:osm/sprite", "http:osm/sprite"},
		{"empty", base, "osm", "", ""},
		{"characters kept", base, "osm", `sprite?a=1&b=<"x">`, base + `/osm/sprite?a=1&b=<"x">`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, _ := json.Marshal(map[string]any{"version": 8, "sources": map[string]any{}, "layers": []any{}, "sprite": c.in})
			out, err := style.Rewrite(in, c.base, c.tileset)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct{ Sprite string }
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Sprite != c.want {
				t.Errorf("got %q, want %q", doc.Sprite, c.want)
			}
			if strings.Contains(string(out), `\u0026`) {
				t.Errorf("got %s, want & unescaped", out)
			}
		})
	}
}

// TestRewriteSources: an image source's url follows the rule; GeoJSON data
// and video urls are not rewritten.
func TestRewriteSources(t *testing.T) {
	t.Parallel()
	const in = `{"version":8,"sources":{"radar":{"type":"image","url":"radar.gif","coordinates":[[0,1],[1,1],[1,0],[0,0]]},` +
		`"pts":{"type":"geojson","data":"points.geojson"},"v":{"type":"video","urls":["v.mp4"]},` +
		`"dem":{"type":"raster-dem","url":"https://old/osm/dem.json","encoding":"terrarium"}},"layers":[]}`
	got, err := style.Rewrite([]byte(in), base, "osm")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`"radar.gif"`, `"`+base+`/osm/radar.gif"`, `"https://old/osm/dem.json"`, `"`+base+`/osm/dem.json"`).Replace(in)
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestRewriteKeepsBytes(t *testing.T) {
	t.Parallel()
	const in = "{ \"version\" : 8.0 ,\n\t\"sources\":{\"a\":{\"url\" :\t\"x.json\", \"extra\":{\"url\":\"keep\"}}},\"layers\":[],\"unknown\":[1e3,\"\\u00e9\"],\"glyphs\":null}"
	// glyphs null is refused below; here the same shape without it.
	doc := strings.Replace(in, `,"glyphs":null`, ``, 1)
	got, err := style.Rewrite([]byte(doc), base, "osm")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(doc, `"x.json"`, `"`+base+`/osm/x.json"`, 1)
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestRewriteRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in string }{
		{"empty", ``},
		{"not JSON", `<html>`},
		{"truncated", `{"version":8,"sources":{},"layers":[]`},
		{"array", `[{"version":8}]`},
		{"no version", `{"sources":{},"layers":[]}`},
		{"version 7", `{"version":7,"sources":{},"layers":[]}`},
		{"version a string", `{"version":"8","sources":{},"layers":[]}`},
		{"no sources", `{"version":8,"layers":[]}`},
		{"sources an array", `{"version":8,"sources":[],"layers":[]}`},
		{"no layers", `{"version":8,"sources":{}}`},
		{"layers an object", `{"version":8,"sources":{},"layers":{}}`},
		{"a TileJSON", `{"tilejson":"3.0.0","tiles":["https://h/{z}/{x}/{y}.png"]}`},
		{"source not an object", `{"version":8,"sources":{"a":"x"},"layers":[]}`},
		{"url not a string", `{"version":8,"sources":{"a":{"url":7}},"layers":[]}`},
		{"tiles not an array", `{"version":8,"sources":{"a":{"tiles":"x"}},"layers":[]}`},
		{"tile not a string", `{"version":8,"sources":{"a":{"tiles":[null]}},"layers":[]}`},
		{"sprite a number", `{"version":8,"sources":{},"layers":[],"sprite":1}`},
		{"sprite array of strings", `{"version":8,"sources":{},"layers":[],"sprite":["x"]}`},
		{"sprite without url", `{"version":8,"sources":{},"layers":[],"sprite":[{"id":"a"}]}`},
		{"glyphs null", `{"version":8,"sources":{},"layers":[],"glyphs":null}`},
		{"too large", `{"version":8,"sources":{},"layers":[],"pad":"` + strings.Repeat("a", style.MaxStyleBytes) + `"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := style.Rewrite([]byte(c.in), base, "osm")
			if !errors.Is(err, style.ErrStyle) {
				t.Errorf("got %.40q, %v, want %v", got, err, style.ErrStyle)
			}
		})
	}
}

func TestRewriteBadArguments(t *testing.T) {
	t.Parallel()
	const doc = `{"version":8,"sources":{},"layers":[]}`
	for _, c := range []struct{ name, base, tileset string }{
		// The base is checked by the one rule for it (internal/httpurl, tested
		// there): user info is refused by that rule and not by a bare parse.
		{"base with user info", "https://user:secret@d1.cloudfront.net", "osm"},
		{"empty name", base, ""},
		{"dot name", base, "a/../b"},
		{"trailing slash", base, "osm/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got, err := style.Rewrite([]byte(doc), c.base, c.tileset); err == nil {
				t.Errorf("got %s, nil, want an error", got)
			}
		})
	}
}

func TestNameFromKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, want string
		ok        bool
	}{
		{"osm/style.json", "osm", true},
		{"maps/osm/style.json", "maps/osm", true},
		{"style.json", "", false},
		{"osm/style.json/x", "", false},
		{"osm/mystyle.json", "", false},
		{"osm.json", "", false},
	} {
		t.Run(c.key, func(t *testing.T) {
			t.Parallel()
			got, ok := style.NameFromKey(c.key)
			if got != c.want || ok != c.ok {
				t.Errorf("got %q, %v, want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// urlFields replaces, in a decoded style, every value Rewrite may change with
// a marker, and returns them.
func urlFields(doc map[string]any) []any {
	var urls []any
	take := func(m map[string]any, k string) {
		if v, ok := m[k]; ok {
			urls = append(urls, v)
			m[k] = "URL"
		}
	}
	if srcs, ok := doc["sources"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(srcs)) {
			src, _ := srcs[k].(map[string]any)
			take(src, "url")
			if tiles, ok := src["tiles"].([]any); ok {
				for i := range tiles {
					urls = append(urls, tiles[i])
					tiles[i] = "URL"
				}
			}
		}
	}
	if sprites, ok := doc["sprite"].([]any); ok {
		for _, s := range sprites {
			sp, _ := s.(map[string]any)
			take(sp, "url")
		}
	} else {
		take(doc, "sprite")
	}
	take(doc, "glyphs")
	return urls
}

// FuzzRewrite: any input is refused with ErrStyle, or comes back as JSON that
// differs from it only in URL fields, each either as it was or under the
// base, and rewriting the answer again changes nothing.
func FuzzRewrite(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"version":8,"sources":{},"layers":[]}`, `{}`, `[]`, `{"version":8,"sources":{"a":{"url":"../../a.json","tiles":["/{z}"]}},"layers":[],"sprite":[{"url":"//h/osm/x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := style.Rewrite(in, base, "osm")
		if err != nil {
			if !errors.Is(err, style.ErrStyle) {
				t.Fatalf("error %v is not ErrStyle", err)
			}
			return
		}
		var before, after map[string]any
		if err := json.Unmarshal(in, &before); err != nil {
			t.Fatalf("accepted input is not a JSON object: %v", err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("output is not a JSON object: %v\n%s", err, out)
		}
		was, now := urlFields(before), urlFields(after)
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("other members changed:\n got %v\nwant %v", after, before)
		}
		for i := range was {
			if now[i] != was[i] && !strings.HasPrefix(now[i].(string), base+"/") {
				t.Fatalf("%q rewritten to %q, not under the base", was[i], now[i])
			}
		}
		again, err := style.Rewrite(out, base, "osm")
		if err != nil || string(again) != string(out) {
			t.Fatalf("second rewrite: got %s, %v, want %s", again, err, out)
		}
	})
}

func BenchmarkRewrite(b *testing.B) {
	in, err := os.ReadFile("testdata/osm-style.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := style.Rewrite(in, base, "osm"); err != nil {
			b.Fatal(err)
		}
	}
}
