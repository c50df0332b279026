package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/archive"
)

// RSSParams sizes the peak-RSS runs of section 6.
type RSSParams struct {
	RepoRoot string // the checkout (functions/tiles is built from it)
	BenchDir string // the bench module (cmd/s3serve is built from it)

	FloodMemBytes  int64         // MEM_CACHE_BYTES of the 404 flood
	FloodRequests  int           // at most this many random missing keys …
	FloodDuration  time.Duration // … and for at most this long
	FloodClients   int           // concurrent clients of the flood
	BigTileBytes   int           // the tile too big for the memory tier
	BigMemBytes    int64         // MEM_CACHE_BYTES of the big-tile run (entry limit 1/8 of it)
	BigMaxTile     string        // MAX_TILE_BYTES of the big-tile run (≥ BigTileBytes)
	BigReaders     int           // concurrent readers per round
	BigRounds      int           // rounds of readers
	HangMemBytes   int64         // MEM_CACHE_BYTES of the S3-hang run
	HangClients    int           // impatient clients per round, each a distinct uncached tile
	HangRounds     int           // rounds of them
	HangPatience   time.Duration // each client's timeout
	MaxOriginFetch int           // MAX_ORIGIN_FETCHES (the product's default)
	// The gzip amplifier: clients without gzip of a gzip tile that decodes
	// large, once too large for the memory tier (GzipDecodedBytes) and once
	// small enough to be kept decoded in it (GzipKeptBytes).
	GzipDecodedBytes int
	GzipKeptBytes    int
	GzipMemBytes     int64
	GzipMaxTile      string // MAX_TILE_BYTES of the run (≥ GzipDecodedBytes)
	GzipClients      int
	GzipRounds       int
	// Archive tiles past MAX_TILE_BYTES: ArchiveClients distinct tiles of
	// one archive, all one deduplicated body of ArchiveTileBytes.
	ArchiveTileBytes int
	ArchiveMaxTile   string // MAX_TILE_BYTES of the run (< ArchiveTileBytes)
	ArchiveMemBytes  int64
	ArchiveClients   int
	ArchiveRounds    int
	// Distinct first path segments: Names missing tiles, each under a name
	// of its own.
	Names         int
	NamesClients  int
	NamesMemBytes int64
	// The IIIF full/max flood: IIIFClients clients at once ask for large
	// answers derived from the pyramidal TIFF at IIIFImage ("": not run).
	// IIIFRenderBytes is its IIIF_RENDER_BYTES, which the bound adds.
	IIIFImage       string
	IIIFClients     int
	IIIFRounds      int
	IIIFMemBytes    int64
	IIIFRenderBytes int64
}

// DefaultRSSParams is the run of `make bench` (quick: a short one).
func DefaultRSSParams(repoRoot, benchDir string, quick bool) RSSParams {
	p := RSSParams{RepoRoot: repoRoot, BenchDir: benchDir,
		FloodMemBytes: 32 << 20, FloodRequests: 250_000, FloodDuration: 150 * time.Second, FloodClients: 16,
		BigTileBytes: 20_000_000, BigMemBytes: 64 << 20, BigMaxTile: "32MiB", BigReaders: 50, BigRounds: 5,
		HangMemBytes: 32 << 20, HangClients: 100, HangRounds: 3, HangPatience: time.Second, MaxOriginFetch: 64,
		GzipDecodedBytes: 64 << 20, GzipKeptBytes: 4 << 20, GzipMemBytes: 64 << 20, GzipMaxTile: "64MiB", GzipClients: 80, GzipRounds: 3,
		ArchiveTileBytes: 17 << 20, ArchiveMaxTile: "16MiB", ArchiveMemBytes: 32 << 20, ArchiveClients: 62, ArchiveRounds: 3,
		Names: 60_000, NamesClients: 16, NamesMemBytes: 32 << 20,
		IIIFClients: 20, IIIFRounds: 3, IIIFMemBytes: 32 << 20, IIIFRenderBytes: 64 << 20}
	if quick {
		p.FloodRequests, p.FloodDuration, p.BigRounds, p.HangRounds = 5_000, 10*time.Second, 2, 2
		p.GzipDecodedBytes, p.GzipClients, p.GzipRounds = 16<<20, 20, 1
		p.ArchiveRounds, p.Names, p.IIIFRounds = 1, 5_000, 1
	}
	return p
}

// RSSRow is one scenario: one fresh tile function process.
type RSSRow struct {
	Scenario string `json:"scenario"`
	MemBytes int64  `json:"mem_cache_bytes"`
	// Extra is what the bound adds for memory held outside MEM_CACHE_BYTES
	// by design (ExtraWhat says what).
	Extra     int64         `json:"extra,omitempty"`
	ExtraWhat string        `json:"extra_what,omitempty"`
	Base      int64         `json:"base"`   // VmRSS of the idle process after start
	VmHWM     int64         `json:"vm_hwm"` // peak RSS over the process's life
	VmRSSEnd  int64         `json:"vm_rss_end"`
	Requests  int           `json:"requests"` // requests the scenario sent
	Answered  string        `json:"answered"` // what they got, in words
	Elapsed   time.Duration `json:"elapsed"`
	Memory    MemTier       `json:"memory"` // the memory tier at the end (admin stats)
	Note      string        `json:"note,omitempty"`
	// Why is what the run measured about a peak over the bound: the
	// target's note when it is missed.
	Why string `json:"why,omitempty"`
}

// Bound is the scenario's bound on peak RSS: what the tile function promises
// off Lambda (MEM_CACHE_BYTES with a tenth more for the tier's overhead,
// plus the memory of the idle process; its collector's limit is half of
// that tenth lower, for the collector's own overshoot), and Extra.
func (r RSSRow) Bound() int64 { return r.MemBytes + r.MemBytes/10 + r.Base + r.Extra }

// MemTier is the memory tier's state from the admin stats.
type MemTier struct {
	Entries   int64 `json:"entries"`
	Bytes     int64 `json:"bytes"`
	Evictions int64 `json:"evictions"`
}

// HangResult is what the S3-hang run saw besides RSS.
type HangResult struct {
	Rounds          int           `json:"rounds"`
	Clients         int           `json:"clients"`
	GaveUp          int           `json:"gave_up"`           // clients that hit their timeout
	OtherAnswers    int           `json:"other_answers"`     // clients answered before their timeout
	SocketsPeak     Sockets       `json:"sockets_peak"`      // most sockets to S3 at one sample during the rounds
	SocketsAfter    Sockets       `json:"sockets_after"`     // 2 s after the last client gave up
	S3PeakInFlight  int64         `json:"s3_peak_in_flight"` // S3 requests being answered at once (s3serve's count)
	S3InFlightAfter int64         `json:"s3_in_flight_after"`
	OriginPeak      int64         `json:"origin_in_flight_peak"` // the function's own count of fetches at once
	OriginAfter     int64         `json:"origin_in_flight_after"`
	Recovery        int           `json:"recovery"`       // misses sent once S3 answered again
	RecoveryOK      int           `json:"recovery_ok"`    // of those, 200
	RecoveryFirst   time.Duration `json:"recovery_first"` // the first such miss
	RecoveryMax     time.Duration `json:"recovery_max"`
	SocketsEnd      Sockets       `json:"sockets_end"` // after recovery (idle keep-alive connections)
}

// RSSResult is the peak-RSS part of section 6.
type RSSResult struct {
	Params  RSSParams   `json:"params"`
	Rows    []RSSRow    `json:"rows"`
	Hang    *HangResult `json:"hang,omitempty"`
	Targets []Target    `json:"targets"`
}

// RunRSS runs the three scenarios, each against a fresh process of the
// tile function (built with go build, run as its local HTTP server) over
// one bench/cmd/s3serve process with its fault controls on.
func RunRSS(ctx context.Context, p RSSParams) (RSSResult, error) {
	res := RSSResult{Params: p}
	tmp, err := TempDir("rss")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	seed, bin, logs := filepath.Join(tmp, "seed"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "logs")
	if err := mkdirs(seed, bin, logs); err != nil {
		return res, err
	}
	// The objects: one tile too big for the memory tier, and small tiles
	// for the hang (each client one of its own) and the recovery.
	big := make([]byte, p.BigTileBytes)
	rand.Read(big)
	sum := sha256.Sum256(big)
	if err := writeFile(filepath.Join(seed, "big", "0", "0", "0.png"), big); err != nil {
		return res, err
	}
	tileBody := make([]byte, 2048)
	rand.Read(tileBody)
	for r := range p.HangRounds + 1 { // the last round's keys are the recovery's
		for i := range p.HangClients {
			if err := writeFile(filepath.Join(seed, "hang", strconv.Itoa(r), strconv.Itoa(i), "0.png"), tileBody); err != nil {
				return res, err
			}
		}
	}
	big = nil
	if p.ArchiveClients > 0 {
		if err := writeOversizeArchive(seed, oversizeArchive, p.ArchiveTileBytes, p.ArchiveClients); err != nil {
			return res, err
		}
	}
	s3p, err := buildAndServe(ctx, p.RepoRoot, p.BenchDir, bin, seed, logs, []string{"-control"})
	if err != nil {
		return res, err
	}
	defer s3p.Stop()
	s3 := s3Control{url: s3p.URL}

	row, err := runFlood(ctx, p, tmp, bin, logs, s3p.URL)
	if err != nil {
		return res, fmt.Errorf("404 flood: %w", err)
	}
	res.Rows = append(res.Rows, row)
	row, err = runBigTile(ctx, p, tmp, bin, logs, s3p.URL, hex.EncodeToString(sum[:]))
	if err != nil {
		return res, fmt.Errorf("big tile: %w", err)
	}
	res.Rows = append(res.Rows, row)
	row, hang, err := runHang(ctx, p, tmp, bin, logs, s3p.URL, s3)
	if err != nil {
		return res, fmt.Errorf("S3 hang: %w", err)
	}
	res.Rows = append(res.Rows, row)
	res.Hang = &hang
	rows, err := resourceRows(ctx, p, tmp, bin, logs, s3p.URL, s3)
	res.Rows = append(res.Rows, rows...)
	if err != nil {
		return res, err
	}
	res.targets()
	return res, nil
}

// resourceRows runs the scenarios after the S3 hang, each that p sizes: the
// gzip amplifier, archive tiles past MAX_TILE_BYTES, distinct first path
// segments and the IIIF full/max flood.
func resourceRows(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string, s3 s3Control) ([]RSSRow, error) {
	var rows []RSSRow
	for _, n := range []int{p.GzipDecodedBytes, p.GzipKeptBytes} {
		if n <= 0 {
			continue
		}
		row, err := runGzipAmplifier(ctx, p, tmp, bin, logs, s3URL, n, p.GzipMemBytes)
		if err != nil {
			return rows, fmt.Errorf("gzip amplifier: %w", err)
		}
		rows = append(rows, row)
	}
	if p.ArchiveClients > 0 {
		row, err := runOversizeArchive(ctx, p, tmp, bin, logs, s3URL)
		if err != nil {
			return rows, fmt.Errorf("archive tile past MAX_TILE_BYTES: %w", err)
		}
		rows = append(rows, row)
	}
	if p.Names > 0 {
		row, err := runNames(ctx, p, tmp, bin, logs, s3URL, s3)
		if err != nil {
			return rows, fmt.Errorf("distinct first segments: %w", err)
		}
		rows = append(rows, row)
	}
	if p.IIIFImage != "" {
		row, err := runIIIFFlood(ctx, p, tmp, bin, logs, s3URL)
		if err != nil {
			return rows, fmt.Errorf("IIIF full/max flood: %w", err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// tilesProc is one started tile function with its idle RSS.
type tilesProc struct {
	*Proc
	url  string
	base int64
}

// startTiles starts the tile function with MEM_CACHE_BYTES mem and the
// extra variables, waits for it, lets it settle and reads its idle RSS.
func startTiles(ctx context.Context, name, tmp, bin, logs, s3URL string, mem int64, extra ...string) (*tilesProc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c := exec.Command(filepath.Join(bin, "tiles"))
	c.Env = append(tilesEnv(tmp, s3URL, port,
		"MEM_CACHE_BYTES="+strconv.FormatInt(mem, 10), "DISK_CACHE_DIR="+filepath.Join(tmp, "disk-"+name), "DISK_CACHE_BYTES=0",
	), extra...)
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	proc, err := StartProc(ctx, "tiles-"+name, c, url, "/_tilesieve/health", logs)
	if err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond)
	m, err := ReadProcMemory(proc.Cmd.Process.Pid)
	if err != nil {
		proc.Stop()
		return nil, err
	}
	return &tilesProc{Proc: proc, url: url, base: m.VmRSS}, nil
}

// finish reads the process's peak and end RSS and memory tier into row.
func (t *tilesProc) finish(row *RSSRow) error {
	m, err := ReadProcMemory(t.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	st, err := tilesStats(t.url)
	if err != nil {
		return err
	}
	row.Base, row.VmHWM, row.VmRSSEnd = t.base, m.VmHWM, m.VmRSS
	row.Memory = MemTier{Entries: st.Memory.Entries, Bytes: st.Memory.Bytes, Evictions: st.Memory.Evictions}
	return nil
}

// runFlood: random missing keys, each an S3 GET answered 404 and then a
// remembered 404 in the memory tier, until the count or the time is used.
func runFlood(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string) (RSSRow, error) {
	row := RSSRow{Scenario: "404 flood", MemBytes: p.FloodMemBytes}
	tp, err := startTiles(ctx, "flood", tmp, bin, logs, s3URL, p.FloodMemBytes)
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	client := HTTPClient()
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, p.FloodDuration)
	defer cancel()
	var sent atomic.Int64
	var answers tally // 404s wanted
	start := time.Now()
	var wg sync.WaitGroup
	for w := range p.FloodClients {
		wg.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(w), 0x404))
			for ctx.Err() == nil && sent.Add(1) <= int64(p.FloodRequests) {
				z := 12 + rng.IntN(7)
				key := fmt.Sprintf("/flood/%d/%d/%d.png", z, rng.IntN(1<<z), rng.IntN(1<<z))
				answers.expect(ctx, client, tp.url+key, http.StatusNotFound)
			}
		})
	}
	wg.Wait()
	row.Elapsed = time.Since(start)
	row.Requests = int(answers.ok.Load() + answers.other.Load())
	row.Answered = fmt.Sprintf("%d 404, %d other", answers.ok.Load(), answers.other.Load())
	row.Note = answers.note("first other answer: ")
	return row, tp.finish(&row)
}

// runBigTile: one tile over the memory tier's entry limit, fetched once
// (it fills the disk tier), then read whole by many readers at once.
func runBigTile(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL, wantSum string) (RSSRow, error) {
	row := RSSRow{Scenario: fmt.Sprintf("%d concurrent reads of a %.0f MB tile", p.BigReaders, float64(p.BigTileBytes)/1e6), MemBytes: p.BigMemBytes}
	tp, err := startTiles(ctx, "big", tmp, bin, logs, s3URL, p.BigMemBytes, "DISK_CACHE_BYTES=1GiB", "MAX_TILE_BYTES="+p.BigMaxTile)
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: p.BigReaders, MaxIdleConns: p.BigReaders}, Timeout: 2 * time.Minute}
	defer client.CloseIdleConnections()
	get := func(check bool) (string, error) {
		resp, err := client.Get(tp.url + "/big/0/0/0.png")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var n int64
		if check {
			h := sha256.New()
			n, err = io.Copy(h, resp.Body)
			if err == nil && hex.EncodeToString(h.Sum(nil)) != wantSum {
				err = errors.New("wrong body")
			}
		} else {
			n, err = io.Copy(io.Discard, resp.Body)
		}
		if err == nil && (resp.StatusCode != http.StatusOK || n != int64(p.BigTileBytes)) {
			err = fmt.Errorf("%s, %d bytes", resp.Status, n)
		}
		return resp.Header.Get("X-Cache"), err
	}
	start := time.Now()
	if xc, err := get(true); err != nil {
		return row, fmt.Errorf("first read: %w", err)
	} else if xc != "MISS" {
		return row, fmt.Errorf("first read: X-Cache %s, want MISS", xc)
	}
	var answers tally // whole 200s wanted
	var disk atomic.Int64
	err = inRounds(ctx, p.BigRounds, p.BigReaders, func(i int) {
		xc, err := get(i == 0)
		switch {
		case err != nil:
			answers.miss(err.Error())
		case xc == "HIT-DISK":
			answers.ok.Add(1)
			disk.Add(1)
		default:
			answers.ok.Add(1)
		}
	})
	if err != nil {
		return row, err
	}
	row.Elapsed = time.Since(start)
	row.Requests = 1 + p.BigRounds*p.BigReaders
	row.Answered = fmt.Sprintf("1 MISS (fills the disk tier), then %d whole 200 (%d HIT-DISK), %d failed", answers.ok.Load(), disk.Load(), answers.other.Load())
	row.Note = answers.note("first failure: ")
	return row, tp.finish(&row)
}

// runHang: S3 holds every tile GET; rounds of impatient clients ask for
// distinct uncached tiles and give up; sockets are counted during and
// after; then S3 answers again and the next misses are sent.
func runHang(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string, s3 s3Control) (RSSRow, HangResult, error) {
	row := RSSRow{Scenario: fmt.Sprintf("S3 hang, %d clients with %v timeouts × %d rounds", p.HangClients, p.HangPatience, p.HangRounds), MemBytes: p.HangMemBytes}
	hr := HangResult{Rounds: p.HangRounds, Clients: p.HangClients}
	tp, err := startTiles(ctx, "hang", tmp, bin, logs, s3URL, p.HangMemBytes)
	if err != nil {
		return row, hr, err
	}
	defer tp.Stop()
	u, err := url.Parse(s3URL)
	if err != nil {
		return row, hr, err
	}
	s3Port, _ := strconv.Atoi(u.Port())
	pid := tp.Cmd.Process.Pid
	if err := s3.post("/_s3serve/hang?match=/hang/&delay=1h"); err != nil {
		return row, hr, err
	}
	defer s3.post("/_s3serve/reset")

	// Sample the sockets while the rounds run.
	sctx, stopSampling := context.WithCancel(ctx)
	var peak Sockets
	var sampled sync.WaitGroup
	sampled.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if s, err := ProcSockets(pid, s3Port); err == nil && s.Total > peak.Total {
				peak = s
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	})
	tr := &http.Transport{MaxIdleConnsPerHost: p.HangClients, MaxIdleConns: p.HangClients}
	client := &http.Client{Transport: tr, Timeout: p.HangPatience}
	defer tr.CloseIdleConnections()
	start := time.Now()
	var gaveUp, other atomic.Int64
	for r := range p.HangRounds {
		var wg sync.WaitGroup
		for i := range p.HangClients {
			wg.Go(func() {
				resp, err := client.Get(fmt.Sprintf("%s/hang/%d/%d/0.png", tp.url, r, i))
				if err != nil {
					gaveUp.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				other.Add(1)
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			stopSampling()
			sampled.Wait()
			return row, hr, ctx.Err()
		}
	}
	time.Sleep(2 * time.Second)
	stopSampling()
	sampled.Wait()
	hr.GaveUp, hr.OtherAnswers, hr.SocketsPeak = int(gaveUp.Load()), int(other.Load()), peak
	if hr.SocketsAfter, err = ProcSockets(pid, s3Port); err != nil {
		return row, hr, err
	}
	ss, err := s3.stats()
	if err != nil {
		return row, hr, err
	}
	hr.S3PeakInFlight, hr.S3InFlightAfter = ss.PeakInFlight, ss.InFlight
	st, err := tilesStats(tp.url)
	if err != nil {
		return row, hr, err
	}
	hr.OriginPeak, hr.OriginAfter = st.Handler.OriginInFlightPeak, st.Handler.OriginInFlight

	// S3 answers again: the next misses (tiles nobody asked for yet).
	if err := s3.post("/_s3serve/reset"); err != nil {
		return row, hr, err
	}
	patient := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var okN atomic.Int64
	var mu sync.Mutex // guards lats
	var lats []time.Duration
	var wg sync.WaitGroup
	for i := range p.HangClients {
		wg.Go(func() {
			t0 := time.Now()
			resp, err := patient.Get(fmt.Sprintf("%s/hang/%d/%d/0.png", tp.url, p.HangRounds, i))
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get("X-Cache") == "MISS" {
				okN.Add(1)
			}
			mu.Lock()
			lats = append(lats, time.Since(t0))
			mu.Unlock()
		})
		if i == 0 {
			wg.Wait() // the first miss alone: does it wait for anything?
		}
	}
	wg.Wait()
	hr.Recovery, hr.RecoveryOK = p.HangClients, int(okN.Load())
	if len(lats) > 0 {
		hr.RecoveryFirst = lats[0]
		for _, l := range lats {
			hr.RecoveryMax = max(hr.RecoveryMax, l)
		}
	}
	if hr.SocketsEnd, err = ProcSockets(pid, s3Port); err != nil {
		return row, hr, err
	}
	row.Elapsed = time.Since(start)
	row.Requests = p.HangRounds*p.HangClients + p.HangClients
	row.Answered = fmt.Sprintf("%d gave up at their timeout, %d answered before it; after recovery %d/%d 200 MISS", hr.GaveUp, hr.OtherAnswers, hr.RecoveryOK, hr.Recovery)
	return row, hr, tp.finish(&row)
}

// s3Control talks to s3serve's fault controls.
type s3Control struct{ url string }

func (c s3Control) post(path string) error {
	resp, err := http.Post(c.url+path, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("s3serve %s: %s %s", path, resp.Status, b)
	}
	return nil
}

type s3ServeStats struct {
	InFlight     int64 `json:"in_flight"`
	PeakInFlight int64 `json:"peak_in_flight"`
	Requests     int64 `json:"requests"`
}

func (c s3Control) stats() (s3ServeStats, error) {
	var s s3ServeStats
	resp, err := http.Get(c.url + "/_s3serve/stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// targets states each scenario's bound and whether the run met it.
func (res *RSSResult) targets() {
	for _, r := range res.Rows {
		extra := ""
		if r.Extra > 0 {
			extra = fmt.Sprintf(" + %s (%s)", r.ExtraWhat, mib(r.Extra))
		}
		res.Targets = append(res.Targets, Target{
			What: fmt.Sprintf("%s: peak RSS ≤ MEM_CACHE_BYTES (%s) × 1.1 + base (%s, idle after start)%s", r.Scenario, mib(r.MemBytes), mib(r.Base), extra),
			Want: float64(r.Bound()) / (1 << 20), Got: float64(r.VmHWM) / (1 << 20), Unit: "MiB",
		}.Check())
		if t := &res.Targets[len(res.Targets)-1]; !t.Met {
			t.Reason = r.Why
		}
	}
	if h := res.Hang; h != nil {
		n := res.Params.MaxOriginFetch
		sockets := Target{What: fmt.Sprintf("S3 hang: sockets to S3 during the rounds ≤ MAX_ORIGIN_FETCHES (%d) + 1 (the journal check's)", n),
			Want: float64(n + 1), Got: float64(h.SocketsPeak.Total), Unit: "sockets"}.Check()
		if !sockets.Met && h.S3PeakInFlight <= int64(n+1) {
			sockets.Reason = fmt.Sprintf("at most %d requests were open at S3 at once (met below), so the other sockets carried none; that is how net/http leaves sockets idle: its transport dials a connection for a request that finds none idle, and when the request takes another connection first, or gives up, the dialed one goes to the idle pool (up to %d per host), to be reused by the next fetch", h.S3PeakInFlight, n)
		}
		res.Targets = append(res.Targets, sockets,
			Target{What: fmt.Sprintf("S3 hang: S3 requests open at once during the rounds ≤ MAX_ORIGIN_FETCHES (%d) + 1 (s3serve's count)", n),
				Want: float64(n + 1), Got: float64(h.S3PeakInFlight), Unit: "requests"}.Check(),
			Target{What: "S3 hang: S3 requests still open 2 s after the last client gave up (s3serve's count)",
				Want: 0, Got: float64(h.S3InFlightAfter), Unit: "requests"}.Check(),
			Target{What: fmt.Sprintf("S3 hang: sockets to S3 2 s after the last client gave up ≤ the origin client's idle pool (%d) + 1", n),
				Want: float64(n + 1), Got: float64(h.SocketsAfter.Total), Unit: "sockets"}.Check(),
			Target{What: "S3 recovered: next misses answered 200",
				Want: 100, Got: 100 * float64(h.RecoveryOK) / float64(max(1, h.Recovery)), Unit: "%", Higher: true}.Check(),
		)
	}
}

// rssHeading opens the peak-RSS part of section 6 (a "#### " part, which
// Merge keeps or replaces on its own).
const rssHeading = "#### Peak RSS under a 404 flood, a tile too big for memory, an S3 hang and resource attacks\n"

// renderRSS writes the peak-RSS part of section 6.
func renderRSS(b *strings.Builder, r *RSSResult) {
	p := r.Params
	b.WriteString(rssHeading + "\n")
	fmt.Fprintf(b, "Each scenario starts a fresh process of the tile function (`go build ./functions/tiles`, run as its local HTTP server: the same handler as on Lambda; no `GOMEMLIMIT`, as off Lambda) "+
		"against `bench/cmd/s3serve -control` (s3local in its own process; its `Faults` are set through its control endpoint). "+
		"**base** is the VmRSS of the idle process 0.5 s after it answered its health check; **peak** is its VmHWM (/proc/<pid>/status) at the end, over its whole life. "+
		"The bound is MEM_CACHE_BYTES × 1.1 + base, the process's bound off Lambda (the tier's per-entry overhead and answers in flight get the tenth; the process gives its collector a limit of MEM_CACHE_BYTES × 1.05 plus its Go memory after init, less the bytes its memory tier holds off the heap, keeping the rest for the collector's overshoot, and its memory tier holds MEM_CACHE_BYTES less a twelfth, so that a full tier leaves the collector room under that limit), plus what a scenario holds outside the tier by design (named in its target). Sockets are the process's own TCP sockets whose remote port is S3's (its descriptors' inodes looked up in /proc/<pid>/net/tcp), sampled every 20 ms.\n\n")
	fmt.Fprintf(b, "- **404 flood**: %d clients GET random missing keys `flood/{12..18}/x/y.png` (each an S3 GET answered 404, then a remembered 404 in memory) until %d requests or %v, whichever comes first; disk tier off.\n",
		p.FloodClients, p.FloodRequests, p.FloodDuration)
	fmt.Fprintf(b, "- **big tile**: one %d-byte object (random bytes) with `MAX_TILE_BYTES=%s`; the memory tier's entry limit is 1/8 of the tier (MEM_CACHE_BYTES less a twelfth: %s), so the tile lives only on the disk tier (1 GiB). One read fills the disk tier, then %d rounds of %d concurrent readers each read it whole (one per round checks its SHA-256).\n",
		p.BigTileBytes, p.BigMaxTile, mib(EntryLimit(p.BigMemBytes)), p.BigRounds, p.BigReaders)
	fmt.Fprintf(b, "- **S3 hang**: s3serve holds every GET under `hang/` (a `Faults` Delay of 1 h that ends when the caller goes away); %d rounds of %d clients, each with a %v timeout and a distinct uncached tile; sockets counted during the rounds and 2 s after; then the fault is removed and %d further misses (the first alone, then the rest at once) must be 200. `MAX_ORIGIN_FETCHES` %d and `ORIGIN_TIMEOUT` 10 s (the defaults); disk tier off.\n",
		p.HangRounds, p.HangClients, p.HangPatience, p.HangClients, p.MaxOriginFetch)
	if p.GzipClients > 0 {
		fmt.Fprintf(b, "- **gzip amplifier**: a gzip tile (stored with `Content-Encoding: gzip`, about 35:1, within the decoder's ratio bound) that decodes to %s, then one that decodes to %s, each in a fresh process with MEM_CACHE_BYTES %s (entry limit %s) and `MAX_TILE_BYTES=%s`; %d round(s) of %d clients without `Accept-Encoding` ask for it at once and must each get the whole decoded body. The decoded variant is produced once per tile version: kept in the memory tier when it fits its entry limit, else only its size is kept and each answer decodes as it is written; disk tier off.\n",
			mib(int64(p.GzipDecodedBytes)), mib(int64(p.GzipKeptBytes)), mib(p.GzipMemBytes), mib(EntryLimit(p.GzipMemBytes)), p.GzipMaxTile, p.GzipRounds, p.GzipClients)
	}
	if p.ArchiveClients > 0 {
		fmt.Fprintf(b, "- **archive tile past MAX_TILE_BYTES**: an archive whose %d tiles 6/0..%d/0 are all one deduplicated body of %s (stored once: the archive is that size), with `MAX_TILE_BYTES=%s`; %d round(s) of %d clients at once, client i asking for tile 6/i/0, must each be refused 502 from the directory entry (no byte of the tile read); refusals are remembered in the directory cache (%s, outside MEM_CACHE_BYTES). Then the archive's small tile must still be 200; disk tier off.\n",
			p.ArchiveClients, p.ArchiveClients-1, mib(int64(p.ArchiveTileBytes)), p.ArchiveMaxTile, p.ArchiveRounds, p.ArchiveClients, mib(archive.DefaultDirectoryBytes))
	}
	if p.Names > 0 {
		fmt.Fprintf(b, "- **distinct first path segments**: %d clients GET `n{0..%d}/0/0/0.png`, each under a first segment of its own that names no tileset (so each costs a probe of NAME.pmtiles and NAME.mbtiles beside the object read, all 404); the names remembered are bounded (settled non-tilesets pruned past a fixed count, those past the archive TTL first) and the negative entries are charged to the memory tier; disk tier off.\n",
			p.NamesClients, p.Names-1)
	}
	if p.IIIFImage != "" {
		fmt.Fprintf(b, "- **IIIF full/max flood**: the %d×%d pyramidal TIFF of section 1b in S3; %d round(s) of %d clients at once, client i asking for `/iiif/3/big/` + form i mod %d of `%s`, each wanting a whole 200, with MEM_CACHE_BYTES %s, IIIF_RENDER_BYTES %s (the pixels of the answers being made at once, which the bound adds) and the other IIIF bounds at their defaults (answers of at most 4096 px a side and 4 Mpx, 16 Mpx decoded per answer, 2 tiles decoded at once); identical requests in flight are merged, and a JPEG answer fits the memory tier's entry limit (%s) while the PNG does not; disk tier off. When the peak is over the bound, the note gives what held the Go heap at its largest in the same flood run against the tile function built in the bench's process (app.NewWithOrigin over the same S3 endpoint; `go tool pprof -top` of a heap profile, in-use bytes).\n",
			BigTIFFWidth, BigTIFFHeight, p.IIIFRounds, p.IIIFClients, len(iiifFloodForms), strings.Join(iiifFloodForms, "`, `"), mib(p.IIIFMemBytes), mib(p.IIIFRenderBytes), mib(p.IIIFMemBytes*7/8/8))
	}
	b.WriteString("\n")
	b.WriteString("| scenario | MEM_CACHE_BYTES | base | bound | peak (VmHWM) | VmRSS at end | requests | answers | memory tier at end | time |\n|---|---:|---:|---:|---:|---:|---:|---|---|---:|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d | %s | %d entries, %s, %d evictions | %s |\n", row.Scenario, mib(row.MemBytes), mib(row.Base), mib(row.Bound()),
			mib(row.VmHWM), mib(row.VmRSSEnd), row.Requests, row.Answered, row.Memory.Entries, mib(row.Memory.Bytes), row.Memory.Evictions, d(row.Elapsed))
	}
	if h := r.Hang; h != nil {
		b.WriteString("\n| S3 hang | during the rounds | 2 s after the last client gave up | after recovery |\n|---|---:|---:|---:|\n")
		fmt.Fprintf(b, "| sockets to S3 held by the tile function (all states / established) | %d / %d (most at one sample) | %d / %d (idle keep-alive: S3 answers none) | %d / %d (idle keep-alive) |\n",
			h.SocketsPeak.Total, h.SocketsPeak.Established, h.SocketsAfter.Total, h.SocketsAfter.Established, h.SocketsEnd.Total, h.SocketsEnd.Established)
		fmt.Fprintf(b, "| S3 requests being answered (s3serve's count) | %d (most at once) | %d | – |\n", h.S3PeakInFlight, h.S3InFlightAfter)
		fmt.Fprintf(b, "| origin fetches running (the function's admin stats) | %d (most at once) | %d | – |\n", h.OriginPeak, h.OriginAfter)
		fmt.Fprintf(b, "| misses once S3 answers again | – | – | %d/%d 200 MISS; first %s, slowest %s |\n", h.RecoveryOK, h.Recovery, d(h.RecoveryFirst), d(h.RecoveryMax))
	}
	b.WriteString("\n| target | want | got | verdict | note |\n|---|---|---|---|---|\n")
	targetRows(b, "", r.Targets)
	b.WriteString("\n")
}

// EntryLimit is the heaviest entry the memory tier of a local tile server
// with MEM_CACHE_BYTES mem admits: an eighth of the tier, which holds mem
// less a twelfth (functions/tiles memTierConfig).
func EntryLimit(mem int64) int64 { return (mem - mem/12) / 8 }
