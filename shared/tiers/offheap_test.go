package tiers_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// versionBody is a body of n bytes that spells v in every 8-byte word.
func versionBody(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v)
	}
	return b
}

// oneVersion reports whether b spells one version throughout: bytes reused
// for another tile would mix two.
func oneVersion(b []byte) bool {
	if len(b) < 8 {
		return true
	}
	v := binary.LittleEndian.Uint64(b)
	for i := 8; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != v {
			return false
		}
	}
	return true
}

// TestOffHeapAnswersOutliveTheirEntries: with the memory tier's bodies off
// the heap, readers hold the Results of lookups (as an answer being
// written does) while other goroutines purge, upload new versions,
// revalidate and evict, and every body a reader reads is one whole
// version; once every Result is released and the tiers purged, the memory
// tier's arena holds nothing. Run with -race.
func TestOffHeapAnswersOutliveTheirEntries(t *testing.T) {
	t.Parallel()
	const size = 3 * memory.MinOffHeap
	api := s3localtest.Start(t, bucket).Client
	weigh := int64(size + 2048) // a generous weight of one entry
	mem, err := memory.New(memory.Config{MaxBytes: 8 * weigh, MaxEntryFraction: 0.5, OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 64 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Copies go stale within milliseconds, so revalidations (304s) and
	// refetches run beside the hits.
	eng, err := tiers.New(tiers.Config{RevalidateAfter: 20 * time.Millisecond},
		tiers.Deps{Memory: mem, Disk: d, Origin: origin.NewWithS3(api, origin.Config{Bucket: bucket, Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 24)
	for i := range keys {
		keys[i] = fmt.Sprintf("t/%d/%d.png", i%3, i)
		s3localtest.Put(t, api, bucket, "tiles/"+keys[i], versionBody(uint64(i), size), "image/png", "")
	}
	var version atomic.Uint64
	version.Store(1000)
	var reads, held atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 11))
			var pending []tiers.Result
			for range 400 {
				k := keys[r.IntN(len(keys))]
				switch p := r.IntN(100); {
				case p < 80:
					res, err := eng.Get(ctx, k, time.Now())
					if err != nil {
						t.Errorf("Get(%s): %v", k, err)
						continue
					}
					reads.Add(1)
					if res.Stream != nil {
						res.Stream.Close()
					}
					pending = append(pending, res)
				case p < 90:
					s3localtest.Put(t, api, bucket, "tiles/"+k, versionBody(version.Add(1), size+8*r.IntN(64)), "image/png", "")
					eng.Purge(k)
				default:
					eng.Purge(k[:2])
				}
				// Answers in flight: a few at once, the oldest written
				// (read) and released first.
				for len(pending) > 3 {
					if !oneVersion(pending[0].Tile.Body) {
						t.Errorf("a body being answered was reused")
					}
					if pending[0].Lease != (memory.Lease{}) {
						held.Add(1)
					}
					pending[0].Release()
					pending = pending[1:]
				}
			}
			for i := range pending {
				if !oneVersion(pending[i].Tile.Body) {
					t.Errorf("a body being answered was reused")
				}
				pending[i].Release()
			}
		})
	}
	wg.Wait()
	st := eng.Stats()
	t.Logf("%d reads, %d of them leased off-heap bodies; %d memory hits, %d revalidated, %d evictions",
		reads.Load(), held.Load(), st.MemoryHits, st.Revalidated, st.Memory.Evictions)
	if held.Load() == 0 || st.Memory.Evictions == 0 {
		t.Fatal("no leased answers or no evictions: the test did not exercise the off-heap tier")
	}
	eng.Drain()
	eng.Purge("")
	if got := mem.OffHeapBytes(); got != 0 {
		t.Fatalf("memory tier holds %d bytes off the heap with no entry and no answer in flight, want 0", got)
	}
}

// TestDiskHitsPromoteWhatComesBack: with the memory tier full, a disk hit
// is answered from its file (Result.Stream) unless the tile came back
// within as many disk reads as the memory tier holds entries; a set read
// in a cycle larger than the memory tier then evicts nothing from it,
// while a tile read twice in a row moves up.
func TestDiskHitsPromoteWhatComesBack(t *testing.T) {
	t.Parallel()
	const size = 3 * memory.MinOffHeap
	api := s3localtest.Start(t, bucket).Client
	mem, err := memory.New(memory.Config{MaxBytes: 6 * (size + 4096), OffHeap: true, MaxEntryFraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	d, err := disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 64 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := tiers.New(tiers.Config{}, tiers.Deps{Memory: mem, Disk: d, Origin: origin.NewWithS3(api, origin.Config{Bucket: bucket, Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(key string) tiers.Result {
		t.Helper()
		res, err := eng.Get(ctx, key, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if res.Stream != nil {
			res.Stream.Close()
		}
		res.Release()
		return res
	}
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("c/%d.png", i)
		s3localtest.Put(t, api, bucket, "tiles/"+keys[i], versionBody(uint64(i), size), "image/png", "")
		get(keys[i]) // the miss fills both tiers
	}
	evicted := mem.Stats().Evictions
	var streamed int
	for range 3 {
		for _, k := range keys {
			if res := get(k); res.Source == tiers.FromDisk && res.Stream != nil {
				streamed++
			}
		}
	}
	if got := mem.Stats().Evictions - evicted; got != 0 {
		t.Errorf("a cycle through %d tiles, %d held in memory, evicted %d", len(keys), mem.Len(), got)
	}
	if streamed < 2*len(keys) {
		t.Errorf("%d of %d disk hits answered from their file", streamed, 3*len(keys))
	}
	k := keys[len(keys)-1]
	mem.Delete(k)
	get(k)
	if res := get(k); res.Source != tiers.FromDisk || res.Stream != nil {
		t.Fatalf("a tile read again at once: source %v, streamed %v; want a disk hit read into memory", res.Source, res.Stream != nil)
	}
	if res := get(k); res.Source != tiers.FromMemory {
		t.Fatalf("then: source %v, want memory", res.Source)
	}
}
