package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/viewer"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
)

// ImagesParams sizes the IIIF images section.
type ImagesParams struct {
	RepoRoot, BenchDir string
	CacheDir           string // where the image is kept between runs
	// Rounds of the timed runs: in each, every server runs each session
	// cold and then warm, in an order that alternates between rounds.
	Rounds     int
	Latencies  []time.Duration // S3's injected first-byte latencies
	WrkDur     time.Duration
	WrkConns   int
	WrkThreads int
	WrkRounds  int
	IIPProcs   int // iipsrv processes behind nginx (one per core)
	IIPCacheMB int // their tile cache, MAX_IMAGE_CACHE_SIZE
	// JPEGQuality is iipsrv's JPEG_QUALITY: the quality of tilesieve's
	// derived JPEG answers, so that both encode alike.
	JPEGQuality int
}

// DefaultImagesParams are the section's sizes (quick: one short round).
func DefaultImagesParams(repoRoot, benchDir, cacheDir string, quick bool) ImagesParams {
	p := ImagesParams{RepoRoot: repoRoot, BenchDir: benchDir, CacheDir: cacheDir, Rounds: 5, Latencies: Latencies,
		WrkDur: 5 * time.Second, WrkConns: 6, WrkThreads: 2, WrkRounds: 5, IIPProcs: 2, IIPCacheMB: 256, JPEGQuality: 90}
	if quick {
		p.Rounds, p.WrkDur, p.WrkRounds = 1, 2*time.Second, 1
	}
	return p
}

// The servers of the section.
const (
	imgTS     = "tilesieve"
	imgIIP    = "IIPImage"
	imgStatic = "nginx static"
)

// imgID is the image's IIIF id at tilesieve (its S3 key is imgID.tif).
const imgID = "big"

// ImageRun is one server × session × latency over every round.
type ImageRun struct {
	Server    string          `json:"server"`
	Session   string          `json:"session"`
	LatencyMs int             `json:"latency_ms"` // S3's (tilesieve's runs)
	Requests  int             `json:"requests"`
	Cold      []time.Duration `json:"cold"` // each round's total, in round order
	Warm      []time.Duration `json:"warm"`
	ColdLat   stats.Summary   `json:"cold_latency"` // every request of the cold runs
	WarmLat   stats.Summary   `json:"warm_latency"`
	ColdCPU   []time.Duration `json:"cold_cpu"`              // the server's processes' CPU time during each cold run
	S3CPU     []time.Duration `json:"s3_cpu,omitempty"`      // s3serve's, during each cold run
	S3        []int           `json:"s3_requests,omitempty"` // S3 requests during each cold run
	Errors    int             `json:"errors"`

	coldAll, warmAll []time.Duration
}

// StoredProbe is the S3 requests of the stored tiles of a session, asked
// alone on a fresh process once the image is open.
type StoredProbe struct {
	Session    string `json:"session"`
	Tiles      int    `json:"tiles"`
	S3Requests int    `json:"s3_requests"`
}

// ImagesResult is the IIIF images section.
type ImagesResult struct {
	Params       ImagesParams  `json:"params"`
	Image        BigTIFF       `json:"image"`
	Levels       [][2]int      `json:"levels"`        // stored levels, full size first
	StoredTiles  int           `json:"stored_tiles"`  // tiles in the file
	OpenRequests int           `json:"open_requests"` // S3 requests of a fresh process's first info.json
	Sessions     []SessionInfo `json:"sessions"`
	SameURLs     bool          `json:"same_urls"` // IIPImage's info.json gives the same tile requests
	Runs         []ImageRun    `json:"runs"`
	Stored       []StoredProbe `json:"stored"`
	Throughput   []ServerRow   `json:"throughput"`
	WrkCommand   string        `json:"wrk_command"`
	Profile      []string      `json:"profile,omitempty"` // perf's hottest symbols of a cold run
	// WrkCPU is each wrk server's processes' CPU time per answer (median
	// over the rounds), and WrkProfile perf's hottest symbols of tilesieve
	// under one more wrk run.
	WrkCPU      map[string]time.Duration `json:"wrk_cpu,omitempty"`
	WrkProfile  []string                 `json:"wrk_profile,omitempty"`
	ProfileNote string                   `json:"profile_note,omitempty"`
	Targets     []Target                 `json:"targets"`
	// LoadAvg is /proc/loadavg at the section's start and end: the work
	// the machine did beside it.
	LoadAvg [2]string `json:"load_avg"`
}

// SessionInfo describes one viewer session as run.
type SessionInfo struct {
	Name     string `json:"name"`
	Requests int    `json:"requests"`
	Tiles    int    `json:"tiles"`
	Stored   int    `json:"stored"` // tiles that are a stored tile as it is
	Phases   string `json:"phases"`
}

// imagesEnv is the processes and directories of one run of the section.
type imagesEnv struct {
	p                   ImagesParams
	tmp, bin, logs, www string
	s3                  map[time.Duration]*Proc // an S3 endpoint per latency
	iip                 *iipServers
	nginx               *Proc // the FastCGI front and the static server
	fcgiURL, staticURL  string
	levels              []*tiff.Level
	ts, iipSess         []viewer.Session // from each server's info.json
	iipLegacy           []viewer.Session // IIPImage's, with OpenSeadragon 2's sizes
	// Each server's requests are its prefix and a session's path.
	tsPrefix, iipPrefix, staticPrefix string
	started                           int // tile function processes started
}

// RunImages runs the section: the image in S3 served by tilesieve, cold
// and warm at each latency, beside IIPImage reading it from local disk and
// nginx serving tilesieve's answers as files.
func RunImages(ctx context.Context, p ImagesParams) (ImagesResult, error) {
	res := ImagesResult{Params: p}
	res.LoadAvg[0] = loadAvg()
	img, err := EnsureBigTIFF(ctx, p.CacheDir)
	res.Image = img
	if err != nil {
		return res, err
	}
	e, err := newImagesEnv(ctx, p, img.Path)
	if err != nil {
		return res, err
	}
	defer e.close()
	for _, l := range e.levels {
		res.Levels = append(res.Levels, [2]int{l.Width, l.Height})
		res.StoredTiles += l.TilesAcross * l.TilesDown
	}
	if err := e.sessions(ctx, &res); err != nil {
		return res, err
	}
	if err := e.rounds(ctx, &res); err != nil {
		return res, err
	}
	if err := e.storedProbes(ctx, &res); err != nil {
		return res, err
	}
	if err := e.throughput(ctx, &res); err != nil {
		return res, err
	}
	e.profile(ctx, &res)
	res.LoadAvg[1] = loadAvg()
	res.targets()
	return res, nil
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// newImagesEnv builds the binaries, starts an S3 endpoint per latency with
// the image as imgID.tif, and nginx in front of (not yet started) iipsrv
// processes reading the same file from local disk.
func newImagesEnv(ctx context.Context, p ImagesParams, image string) (*imagesEnv, error) {
	tmp, err := TempDir("images")
	if err != nil {
		return nil, err
	}
	e := &imagesEnv{p: p, tmp: tmp, bin: filepath.Join(tmp, "bin"), logs: filepath.Join(tmp, "logs"), www: filepath.Join(tmp, "www"),
		s3: map[time.Duration]*Proc{}, tsPrefix: "iiif/3/" + imgID + "/", staticPrefix: "iiif/3/" + imgID + "/",
		iipPrefix: strings.TrimPrefix(iipPath, "/") + "?IIIF=" + imgID + ".tif/"}
	imgDir := filepath.Join(tmp, "img")
	// nginx's workers run as an unprivileged user when started as root.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return e, err
	}
	if err := mkdirs(e.bin, e.logs, e.www, imgDir, filepath.Join(tmp, "nginx")); err != nil {
		return e, err
	}
	if err := copyFile(image, filepath.Join(imgDir, imgID+".tif")); err != nil {
		return e, err
	}
	if e.levels, err = tiffLevels(ctx, image); err != nil {
		return e, err
	}
	if err := BuildAll(ctx, e.bin, Build{p.RepoRoot, "tiles", "./functions/tiles"}, Build{p.BenchDir, "s3serve", "./cmd/s3serve"}); err != nil {
		return e, err
	}
	for _, lat := range p.Latencies {
		s3p, err := StartS3Serve(ctx, filepath.Join(e.bin, "s3serve"), imgDir, e.logs, "-control", "-latency", lat.String())
		if err != nil {
			return e, err
		}
		e.s3[lat] = s3p
	}
	if e.iip, err = newIIPServers(p.IIPProcs, imgDir, p.IIPCacheMB, p.JPEGQuality, e.logs); err != nil {
		return e, err
	}
	return e, e.startNginx(ctx)
}

func (e *imagesEnv) startNginx(ctx context.Context) error {
	fcgi, err := FreePort()
	if err != nil {
		return err
	}
	static, err := FreePort()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(e.www, "probe.txt"), []byte("ok\n")); err != nil {
		return err
	}
	dir := filepath.Join(e.tmp, "nginx")
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(imagesNginxConf(dir, e.www, fcgi, static, e.iip.ports)), 0o644); err != nil {
		return err
	}
	e.fcgiURL, e.staticURL = "http://127.0.0.1:"+strconv.Itoa(fcgi), "http://127.0.0.1:"+strconv.Itoa(static)
	e.nginx, err = StartProc(ctx, "nginx", exec.Command("nginx", "-p", dir+"/", "-e", filepath.Join(dir, "error.log"), "-c", conf), e.staticURL, "/probe.txt", e.logs)
	return err
}

func (e *imagesEnv) close() {
	if e.iip != nil {
		e.iip.stop()
	}
	e.nginx.Stop()
	for _, s := range e.s3 {
		s.Stop()
	}
	os.RemoveAll(e.tmp)
}

// tiffLevels reads the stored levels of the image file.
func tiffLevels(ctx context.Context, path string) ([]*tiff.Level, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := tiff.Open(ctx, tiff.ReaderAt(f), st.Size(), tiff.Options{})
	if err != nil {
		return nil, err
	}
	return t.Levels, nil
}

// storedAsIs reports whether a viewer's tile is one stored tile at its
// stored size, not padded past the level's edge: the request tilesieve
// answers with the stored bytes (images' Plan.Match).
func storedAsIs(levels []*tiff.Level, t viewer.Tile) bool {
	l := 0
	for f := t.Factor; f > 1; f /= 2 {
		l++
	}
	if l >= len(levels) || 1<<l != t.Factor {
		return false
	}
	lv := levels[l]
	return t.Size == fmt.Sprintf("%d,%d", lv.TileWidth, lv.TileHeight) &&
		(t.X+1)*lv.TileWidth <= lv.Width && (t.Y+1)*lv.TileHeight <= lv.Height
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// getBody GETs url and wants a 200.
func getBody(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return b, err
}

// asWorkload is s with every path under prefix.
func asWorkload(s viewer.Session, prefix string) workload.Workload {
	w := workload.Workload{Name: s.Name}
	for _, ph := range s.Phases {
		keys := make([]string, len(ph.Paths))
		for i, p := range ph.Paths {
			keys[i] = prefix + p
		}
		w.Phases = append(w.Phases, workload.Phase{Name: ph.Name, Keys: keys, Concurrency: ph.Concurrency})
	}
	return w
}
