package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
)

// iiifFloodForms are the large answers of the full/max flood: the whole
// image at the largest size the service allows, as JPEG and PNG, and its
// middle quarter.
var iiifFloodForms = []string{"full/max/0/default.jpg", "full/max/0/default.png", "pct:50,50,50,50/max/0/default.jpg"}

// iiifFloodKey is the image's S3 key in the flood's bucket.
const iiifFloodKey = "big.tif"

// runIIIFFlood: IIIFClients clients at once, client i asking for form i
// (mod 3) of iiifFloodForms of the section's pyramidal TIFF, IIIFRounds
// rounds, on a fresh process with the flood's memory bound; disk tier off.
// Identical requests in flight are merged by the engine; an answer that
// fits the memory tier's entry limit is a memory hit from then on.
func runIIIFFlood(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string) (RSSRow, error) {
	row := RSSRow{Scenario: fmt.Sprintf("IIIF full/max flood: %d clients × %d rounds of %d large forms of a %d×%d pyramidal TIFF",
		p.IIIFClients, p.IIIFRounds, len(iiifFloodForms), BigTIFFWidth, BigTIFFHeight), MemBytes: p.IIIFMemBytes,
		Extra: p.IIIFRenderBytes, ExtraWhat: "IIIF_RENDER_BYTES"}
	if err := putFile(ctx, s3URL, iiifFloodKey, p.IIIFImage, "image/tiff"); err != nil {
		return row, err
	}
	tp, err := startTiles(ctx, "iiif", tmp, bin, logs, s3URL, p.IIIFMemBytes, "IIIF_RENDER_BYTES="+strconv.FormatInt(p.IIIFRenderBytes, 10))
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	client := HTTPClient()
	defer client.CloseIdleConnections()
	start := time.Now()
	var st formStatuses
	err = inRounds(ctx, p.IIIFRounds, p.IIIFClients, func(i int) { st.get(ctx, client, tp.url, i) })
	if err != nil {
		return row, err
	}
	row.Elapsed = time.Since(start)
	row.Requests = p.IIIFRounds * p.IIIFClients
	row.Answered = st.String()
	if err := tp.finish(&row); err != nil {
		return row, err
	}
	if row.VmHWM > row.Bound() {
		top, err := iiifFloodHeap(ctx, p, tmp, s3URL)
		if err != nil {
			top = "heap profile: " + err.Error()
		}
		row.Why = fmt.Sprintf("peak %s over the bound; %s", mib(row.VmHWM-row.Bound()), top)
	}
	return row, nil
}

// formStatuses counts the flood's answers by form and status.
type formStatuses struct {
	mu sync.Mutex // guards n
	n  map[[2]string]int
}

// get asks for form i (mod the forms) and counts its answer.
func (f *formStatuses) get(ctx context.Context, c *http.Client, base string, i int) {
	form := iiifFloodForms[i%len(iiifFloodForms)]
	status := "error"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+iiifFloodPath(i), nil)
	if err == nil {
		var resp *http.Response
		if resp, err = c.Do(req); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = strconv.Itoa(resp.StatusCode)
			if err != nil {
				status = "cut short"
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[[2]string]int{}
	}
	f.n[[2]string{form, status}]++
}

// String is "form: n × status" for each form and status.
func (f *formStatuses) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, form := range iiifFloodForms {
		for _, s := range []string{"200", "400", "413", "500", "501", "503", "504", "cut short", "error"} {
			if n := f.n[[2]string{form, s}]; n > 0 {
				parts = append(parts, fmt.Sprintf("`%s` %d × %s", form, n, s))
			}
		}
	}
	return strings.Join(parts, ", ")
}

func iiifFloodPath(n int) string {
	return "/iiif/3/" + strings.TrimSuffix(iiifFloodKey, ".tif") + "/" + iiifFloodForms[n%len(iiifFloodForms)]
}

// putFile uploads the file at path to the bucket of the endpoint at s3URL.
func putFile(ctx context.Context, s3URL, key, path, contentType string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	seeder, err := s3local.New(s3local.Config{})
	if err != nil {
		return err
	}
	_, err = s3local.Put(ctx, seeder.Client(s3URL), Bucket, key, b, contentType, "")
	return err
}

// iiifFloodHeap runs the flood once more against the tile function built in
// this process from the same configuration (app.NewWithOrigin over the same
// S3 endpoint), under the Go memory limit the process sets off Lambda
// (MEM_CACHE_BYTES × 1.05 + IIIF_RENDER_BYTES + the memory in use after init), so that its
// collector runs as the process's does and the heap profile's in-use
// figures (those of the last collection) follow the live heap. It samples
// the profile every 20 ms and names the functions that held the most at
// the sample with the most in use.
func iiifFloodHeap(ctx context.Context, p RSSParams, tmp, s3URL string) (string, error) {
	env := map[string]string{"TILES_BUCKET": Bucket, "MEM_CACHE_BYTES": strconv.FormatInt(p.IIIFMemBytes, 10), "DISK_CACHE_BYTES": "0",
		"IIIF_RENDER_BYTES": strconv.FormatInt(p.IIIFRenderBytes, 10),
		"DISK_CACHE_DIR":    filepath.Join(tmp, "disk-heap"), "LOG_LEVEL": "warn"}
	for _, kv := range S3Env(s3URL) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		return "", err
	}
	seeder, err := s3local.New(s3local.Config{})
	if err != nil {
		return "", err
	}
	a, err := app.NewWithOrigin(ctx, cfg, origin.NewWithS3(seeder.Client(s3URL), app.OriginConfig(cfg)), slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	defer a.Close()
	url, stop, err := Serve(a.Handler)
	if err != nil {
		return "", err
	}
	defer stop()
	runtime.MemProfileRate = 64 << 10
	defer func() { runtime.MemProfileRate = 512 << 10 }()
	debug.FreeOSMemory()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(p.IIIFMemBytes + p.IIIFMemBytes/20 + p.IIIFRenderBytes + goMemoryInUse()))
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	peak := sampleHeap(ctx, func() {
		client := HTTPClient()
		defer client.CloseIdleConnections()
		var st formStatuses
		inRounds(ctx, p.IIIFRounds, p.IIIFClients, func(i int) { st.get(ctx, client, url, i) })
	})
	if peak.inUse == 0 {
		return "", errors.New("no heap sample")
	}
	return fmt.Sprintf("the same flood against the tile function built in the bench's process, under the same Go memory limit, held %s of Go heap in use at its most (heap profile), of which: %s",
		mib(peak.inUse), strings.Join(peak.top, ", ")), nil
}

// goMemoryInUse is the memory the Go runtime has mapped and not returned.
func goMemoryInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// heapPeak is the heap profile's largest in-use total during a run and the
// functions that allocated the most of it.
type heapPeak struct {
	inUse int64
	top   []string
}

// sampleHeap runs fn, reading the heap profile every 20 ms.
func sampleHeap(ctx context.Context, fn func()) heapPeak {
	var best heapPeak
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var recs []runtime.MemProfileRecord
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, ok := runtime.MemProfile(recs, true)
			if !ok {
				recs = make([]runtime.MemProfileRecord, n+64)
				continue
			}
			if sum := inUse(recs[:n]); sum > best.inUse {
				best = heapPeak{inUse: sum, top: allocators(recs[:n], 5)}
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return best
}

func inUse(recs []runtime.MemProfileRecord) int64 {
	var sum int64
	for _, r := range recs {
		sum += r.InUseBytes()
	}
	return sum
}

// allocators are the n places holding the most in-use bytes: the first
// frame of each allocation outside the runtime and, when that is not the
// project's own code, the project's first frame under it ("a ← b").
func allocators(recs []runtime.MemProfileRecord, n int) []string {
	const own = "github.com/tilesieve/tilesieve/"
	by := map[string]int64{}
	for _, r := range recs {
		if r.InUseBytes() == 0 {
			continue
		}
		frames := runtime.CallersFrames(r.Stack())
		name, via := "?", ""
		for {
			f, more := frames.Next()
			switch {
			case name == "?" && !strings.HasPrefix(f.Function, "runtime."):
				name = strings.TrimPrefix(f.Function, own)
				if strings.HasPrefix(f.Function, own) {
					more = false
				}
			case name != "?" && strings.HasPrefix(f.Function, own):
				via, more = " ← "+strings.TrimPrefix(f.Function, own), false
			}
			if !more {
				break
			}
		}
		by[name+via] += r.InUseBytes()
	}
	names := slices.SortedFunc(maps.Keys(by), func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	var out []string
	for _, name := range names[:min(n, len(names))] {
		out = append(out, fmt.Sprintf("`%s` %s", name, mib(by[name])))
	}
	return out
}
