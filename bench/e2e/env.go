// Package e2e holds the end-to-end benchmarks of tilesieve: each section of
// docs/BENCHMARKS.md between the e2e markers is one Run function here,
// returning a JSON-able result with its target and verdict. The pure parts
// (percentiles, tool output parsers, the PMTiles writer, the workloads, the
// tiles) live in the sub-packages and are unit tested; this package wires
// them to the product's packages (shared/tileserver, shared/origin/s3local, …) and
// to real processes on loopback ports.
package e2e

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// Bucket is the bucket every benchmark uses.
const Bucket = "tiles"

// LocalS3 is an in-process S3 endpoint served on a loopback port.
type LocalS3 struct {
	S3     *s3local.Server
	HTTP   *httptest.Server
	Client *s3.Client
}

// NewLocalS3 starts an endpoint with the benchmark bucket.
func NewLocalS3() (*LocalS3, error) {
	srv, err := s3local.New(s3local.Config{Buckets: []string{Bucket}})
	if err != nil {
		return nil, err
	}
	h := httptest.NewServer(srv.Handler())
	return &LocalS3{S3: srv, HTTP: h, Client: newS3Client(h.URL, srv)}, nil
}

// Close stops the endpoint.
func (l *LocalS3) Close() { l.HTTP.Close() }

// URL is the endpoint's base URL.
func (l *LocalS3) URL() string { return l.HTTP.URL }

// newS3Client is s3local's client with the connection pool the product's
// origin client uses (64 idle connections per host), so the direct-to-origin
// baselines are not held back by the SDK's default of 10.
func newS3Client(url string, srv *s3local.Server) *s3.Client {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 64
	})
	return s3.New(srv.Client(url).Options(), func(o *s3.Options) { o.HTTPClient = hc })
}

// Origin returns a product origin client over the endpoint.
func (l *LocalS3) Origin() *origin.Client {
	return origin.NewWithS3(newS3Client(l.URL(), l.S3), origin.Config{Bucket: Bucket})
}

// TierOptions shape one tile server instance.
type TierOptions struct {
	MemBytes int64 // memory tier bound; default 256 MiB
	NoMemory bool  // admit nothing to memory (every request misses it)
	DiskDir  string
	Disk     *disk.Store // reuse a filled disk tier (memory dropped)
}

// Instance is a tile server built from the product's packages.
type Instance struct {
	Server *servertest.Stack
	Memory *memory.Cache
	Disk   *disk.Store
}

// NewInstance builds a tileserver over o with the given tiers.
func NewInstance(o *origin.Client, opt TierOptions) (*Instance, error) {
	cfg := memory.Config{MaxBytes: opt.MemBytes}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 256 << 20
	}
	if opt.NoMemory {
		// Nothing weighs less than a billionth of the bound: nothing is admitted.
		cfg = memory.Config{MaxBytes: 1 << 20, MaxEntryFraction: 1e-9}
	}
	mem, err := memory.New(cfg)
	if err != nil {
		return nil, err
	}
	inst := &Instance{Memory: mem, Disk: opt.Disk}
	if inst.Disk == nil && opt.DiskDir != "" {
		d, err := disk.Open(disk.Config{Dir: opt.DiskDir, MaxBytes: 4 << 30}, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, err
		}
		inst.Disk = d
	}
	srv, err := servertest.New(servertest.Config{}, servertest.Deps{Memory: mem, Disk: inst.Disk, Origin: o})
	if err != nil {
		return nil, err
	}
	inst.Server = srv
	return inst, nil
}

// Serve serves h on a fresh 127.0.0.1 port until the returned stop is called.
func Serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// HTTPClient is a client for loopback benchmarks with enough idle
// connections for the highest concurrency used.
func HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}, Timeout: 30 * time.Second}
}

// TilePool is the pool of JPEG tiles the sections draw their tile sets
// from: the same bytes in every run.
func TilePool() tileset.Pool { return tileset.NewPool(24, 320, 10_000, 60_000, 1) }

// TempDir makes a directory under the system temp dir.
func TempDir(pattern string) (string, error) { return os.MkdirTemp("", "tilesieve-e2e-"+pattern+"-") }

// S3Env is the environment (KEY=VALUE) under which a tile or worker binary
// speaks to the local S3 endpoint at url, path-style, with s3local's region
// and credentials, and reads none of the machine's AWS configuration.
func S3Env(url string) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + url, "S3_FORCE_PATH_STYLE=true",
		"AWS_REGION=" + s3local.DefaultRegion, "AWS_ACCESS_KEY_ID=" + s3local.DefaultAccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s3local.DefaultSecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

// tilesEnv is the environment of a local tile function process serving
// Bucket from the S3 endpoint at s3URL on 127.0.0.1:port, its home under
// tmp, with the admin API on; extra follows.
func tilesEnv(tmp, s3URL string, port int, extra ...string) []string {
	env := append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TILES_BUCKET=" + Bucket,
		"PORT=" + strconv.Itoa(port), "LISTEN_ADDR=127.0.0.1", "LOG_LEVEL=warn", "ADMIN_TOKEN=" + adminToken,
	}, S3Env(s3URL)...)
	return append(env, extra...)
}
