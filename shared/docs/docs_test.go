package docs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestKind(t *testing.T) {
	t.Parallel()
	built := tile.DerivedTag(`"v1"`, tileset.Tag)
	for _, tc := range []struct {
		key, etag       string
		tileJSON, named bool
	}{
		{"world.json", built, true, false},
		{"world.json", `"v1"`, false, false},      // an object NAME.json, served as stored
		{"a/world.json", built, false, false},     // not a tileset's NAME.json
		{"world/style.json", `"v1"`, false, true}, // a style
		{"img/info.json", `"v1"`, false, true},    // a IIIF info.json
		{"world/0/0/0.pbf", `"v1"`, false, false}, // a tile
	} {
		gotJSON, gotNamed := Kind(tc.key, &tile.Tile{ETag: tc.etag})
		if gotJSON != tc.tileJSON || gotNamed != tc.named {
			t.Errorf("Kind(%s, %s): got %v %v, want %v %v", tc.key, tc.etag, gotJSON, gotNamed, tc.tileJSON, tc.named)
		}
	}
}

// TestRenderUnderBase: a TileJSON is answered with its tile URLs under the
// base it is rendered for, and another base is another representation.
func TestRenderUnderBase(t *testing.T) {
	t.Parallel()
	prepared := 0
	d, err := New(noEngine{}, Deps{
		Prepare: func(string, *tile.Tile) { prepared++ },
		Decode:  func(_ string, b []byte) ([]byte, error) { return b, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := &tile.Tile{
		Body: []byte(`{"tilejson":"3.0.0","tiles":["` + tileset.PlaceholderBase + `/world/{z}/{x}/{y}.pbf"],"format":"pbf"}`),
		ETag: tile.DerivedTag(`"v1"`, tileset.Tag),
	}
	a := d.Render("world.json", "https://a.example", stored)
	b := d.Render("world.json", "https://b.example", stored)
	again := d.Render("world.json", "https://a.example", stored)
	if want := `"https://a.example/world/{z}/{x}/{y}.pbf"`; !strings.Contains(string(a.Body), want) {
		t.Errorf("rendered under a: got %s, want tiles %s", a.Body, want)
	}
	if a.ETag == b.ETag || a.ETag == stored.ETag {
		t.Errorf("ETags: got %s (a) %s (b) %s (stored), want three different", a.ETag, b.ETag, stored.ETag)
	}
	if again != a || prepared != 2 {
		t.Errorf("a second render under a: got a new rendering (%v) after %d prepared, want the kept one after 2", again != a, prepared)
	}
	d.Purged("world")
	if d.Render("world.json", "https://a.example", stored) == a {
		t.Errorf("after a purge of world: got the kept rendering, want a new one")
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	cdn := Base{CDNSecret: "s3cret"}
	for _, tc := range []struct {
		name              string
		base              Base
		secret, fwd, host string
		want              string
	}{
		{"public URL wins", Base{PublicURL: "https://tiles.example/"}, "s3cret", "cdn.example", "fn.example", "https://tiles.example"},
		{"through the CDN", cdn, "s3cret", "CDN.example, other", "fn.example", "https://cdn.example"},
		{"forwarded host without the secret", cdn, "wrong", "evil.example", "fn.example", "http://fn.example"},
		{"no secret set believes no one", Base{}, "", "evil.example", "fn.example", "http://fn.example"},
		{"a host that could reshape a URL", cdn, "s3cret", "evil.example/x", "fn.example", "http://fn.example"},
		{"no usable host", Base{}, "", "", "a b", "http://localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.base.URL(tc.secret, tc.fwd, tc.host); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// noEngine is an engine that holds nothing and is never purged.
type noEngine struct{}

func (noEngine) Get(context.Context, string, time.Time) (tiers.Result, error) {
	return tiers.Result{}, tile.ErrNotFound
}

func (noEngine) OnPurge(func(string)) {}
