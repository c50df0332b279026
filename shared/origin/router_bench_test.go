package origin_test

import (
	"context"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
)

// benchGet reads one tile through get, as the engine does on a miss.
func benchGet(b *testing.B, get func(ctx context.Context, key, inm string) error, key string) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := get(ctx, key, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetClient is the baseline: a miss read by the Client itself.
func BenchmarkGetClient(b *testing.B) {
	r := benchRouter(b)
	benchGet(b, func(ctx context.Context, key, inm string) error { _, err := r.Default().Get(ctx, key, inm); return err }, "roads/1/0/0.png")
}

// BenchmarkGetRouterDefault is the same read through the Router (a key of
// the default source).
func BenchmarkGetRouterDefault(b *testing.B) {
	r := benchRouter(b)
	benchGet(b, func(ctx context.Context, key, inm string) error { _, err := r.Get(ctx, key, inm); return err }, "roads/1/0/0.png")
}

// BenchmarkGetRouterSource reads a tile of a source in another bucket.
func BenchmarkGetRouterSource(b *testing.B) {
	r := benchRouter(b)
	benchGet(b, func(ctx context.Context, key, inm string) error { _, err := r.Get(ctx, key, inm); return err }, "osm/1/0/0.png")
}

func benchRouter(b *testing.B) *origin.Router {
	b.Helper()
	r, _, _ := routerEnvTB(b)
	return r
}

// BenchmarkLookup is the routing itself, per key, among ten sources: a
// key of the default source and one of a source.
func BenchmarkLookup(b *testing.B) {
	list := []sources.Source{}
	for _, n := range []string{"osm", "sat", "world", "a", "b", "c", "d", "e", "f", "g"} {
		list = append(list, sources.Source{Name: n, Bucket: "other", Prefix: n + "/"})
	}
	tb := sources.New(sources.Default{Bucket: "tiles", Prefix: "tiles/"}, list)
	for _, key := range []string{"roads/12/2048/1361.png", "osm/12/2048/1361.png"} {
		b.Run(sources.Name(key), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tb.Lookup(key)
			}
		})
	}
}
