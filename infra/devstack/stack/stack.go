// Package stack composes the whole tilesieve loop in one process, for
// `make run` and for end-to-end tests:
//
//   - an S3-compatible endpoint (shared/origin/s3local) seeded with a demo
//     tileset and a demo IIIF image (demoimage),
//     behind an emulation of S3 event notifications (s3notify) that delivers
//     every change under TILES_PREFIX to the sync worker, as S3 invokes the
//     worker Lambda asynchronously;
//   - the sync worker, assembled as on Lambda (worker/app), writing the purge
//     journal in the same bucket as on AWS and receiving the admin purges'
//     CDN invalidations the tile function hands over, as SQS messages;
//   - the tile function (functions/tiles/app), which follows that journal,
//     served on a local port together with a map viewer at "/", and a
//     MapLibre viewer and an IIIF viewer under /_viewer/ (package viewer).
//
// Pointed at another S3 (Options.Embedded false: AWS, LocalStack), it runs
// only the tile function and the viewer against it, configured from the
// environment exactly as on Lambda; purges then come from whatever delivers
// that bucket's events (the deployed worker, LocalStack's notifications).
//
// The demo actions under /_tilesieve/devstack/ (see actions.go) make the
// tiers a request rarely meets locally visible: a fresh memory tier over the
// kept disk tier, and a short S3 outage.
package stack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/infra/devstack/demoimage"
	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
	"github.com/tilesieve/tilesieve/shared/tilename"
	workerapp "github.com/tilesieve/tilesieve/worker/app"
)

// Defaults of the embedded stack. The credentials are not secrets: the
// embedded endpoint only checks that requests are signed with them.
const (
	DefaultS3Addr     = "127.0.0.1:9000"
	DefaultBucket     = "tiles"
	DefaultPrefix     = "tiles/"
	DefaultAdminToken = "local-admin-token"
	DefaultDiskBytes  = "256MiB"
	// DefaultRevalidateAfter is short so a demo sees REVALIDATED (and, in an
	// outage, STALE) within a minute, not after Lambda's default hour.
	DefaultRevalidateAfter = "30s"
)

// s3Variables locate the S3 of the environment; the embedded stack
// overrides them and says so.
var s3Variables = []string{"AWS_ENDPOINT_URL", "TILES_BUCKET", "S3_FORCE_PATH_STYLE"}

// Options configure Start.
type Options struct {
	// Env reads the configuration (config.LoadTiles / LoadWorker and the
	// variables below); nil is the process environment.
	Env config.Env
	// Embedded starts the in-process S3 endpoint, event notifications and the
	// worker; the environment's AWS_ENDPOINT_URL, TILES_BUCKET and
	// S3_FORCE_PATH_STYLE are then not used (Stack.IgnoredEnv lists those
	// set). False serves the S3 the environment configures, which must give
	// a region and credentials.
	Embedded bool
	// S3Addr is where the embedded endpoint listens; default DefaultS3Addr.
	// Tests use "127.0.0.1:0".
	S3Addr string
	// Addr is where the tile function and the viewer listen; default
	// LISTEN_ADDR:PORT (127.0.0.1:8080). Tests use "127.0.0.1:0".
	Addr string
	// Seed writes the demo tileset (zoom 0 to SeedMaxZoom) and the demo
	// IIIF image (demoimage.Key) at start. The embedded endpoint starts
	// empty, so `make run` seeds it; against another S3 seeding writes into
	// a real bucket and is asked for explicitly.
	Seed        bool
	SeedMaxZoom int // default demotiles.DefaultMaxZoom
	// Tiles are the user's own tilesets loaded at start, each a directory
	// NAME of z/x/y.ext tiles, a NAME.pmtiles archive, a NAME.mbtiles
	// database or a NAME.tif image (a map tileset too when georeferenced, a
	// COG), stored under TILES_PREFIX as NAME/…, NAME.pmtiles,
	// NAME.mbtiles or NAME.tif through infra/tilesieve/upload, as the upload
	// command stores them (and checks them: a file it refuses stops the
	// start).
	Tiles []string
	// Logger receives the stack's logs; default discards.
	Logger *slog.Logger
	// OnEvent, when set, sees every S3 notification after its delivery to the
	// worker (tests).
	OnEvent func(s3notify.Delivery)
	// CDN, when set, is the CDN the embedded worker invalidates (tests put
	// a cache and a CloudFront stand-in there). The worker then waits
	// SYNC_INTERVAL + SYNC_TIMEOUT between the journal and the CDN, as the
	// deployed worker does.
	CDN *cloudfront.Invalidator
	// EventBatch above 1 delivers the notifications to the worker as SQS
	// batches of up to that many, as the deployed queue does; default one
	// notification per invocation.
	EventBatch int
	// OnHandoff, when set, sees every CDN invalidation the tile function
	// handed to the worker, with the worker's answer (tests).
	OnHandoff func(purge.Invalidation, error)
}

// Stack is a running local stack.
type Stack struct {
	URL    string // the tile function and the viewer, e.g. http://127.0.0.1:8080
	S3URL  string // the embedded S3 endpoint; "" when not embedded
	Region string
	Seeded int // demo tiles written at start
	// DemoImage is the IIIF id of the demo image written at start
	// (demoimage.ID); "" when not seeded.
	DemoImage string
	Loaded    []string     // names of the tilesets loaded from Options.Tiles
	Images    []string     // ids of the images (TIFFs) loaded from Options.Tiles
	Tiles     config.Tiles // bucket, prefix, admin token: what the tile function runs with
	// IgnoredEnv are the S3 variables set in the environment that the
	// embedded stack does not use.
	IgnoredEnv []string
	// Example is the demo tile the banner's commands change.
	Example string

	App      *app.App
	S3       *s3local.Server    // nil when not embedded
	Notifier *s3notify.Notifier // nil when not embedded
	Worker   *workerapp.App     // nil when not embedded
	Client   *s3.Client         // an S3 client of the embedded endpoint; nil when not embedded
	closers  []func(context.Context) error
	log      *slog.Logger
	outage   outage
}

// Start builds and starts the stack. The returned stack runs until Close;
// ctx bounds the start only. Its errors start with "devstack: ", once.
func Start(ctx context.Context, opts Options) (st *Stack, err error) {
	opts = opts.withDefaults()
	st = &Stack{log: opts.Logger, Example: demotiles.Key(exampleTile(opts.SeedMaxZoom))}
	defer func() {
		if err != nil {
			err = fmt.Errorf("devstack: %w", err)
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			st.Close(cctx)
			st = nil
		}
	}()
	env, ln, err := st.configure(ctx, opts)
	if err != nil {
		return st, err
	}
	if opts.Embedded {
		if err := st.startS3(ctx, ln, env, opts); err != nil {
			return st, err
		}
	}
	// One origin client serves the seeding and the tile function: the
	// embedded endpoint's, or the SDK's own configuration from the
	// environment against another S3.
	var o *origin.Client
	if st.Client != nil {
		o = origin.NewWithS3(st.Client, app.OriginConfig(st.Tiles))
	} else if o, err = origin.New(ctx, app.OriginConfig(st.Tiles)); err != nil {
		return st, fmt.Errorf("tile function: %w", err)
	}
	if opts.Seed {
		if err := st.seed(ctx, o.S3(), opts.SeedMaxZoom); err != nil {
			return st, err
		}
	}
	for _, path := range opts.Tiles {
		if err := st.load(ctx, o.S3(), path); err != nil {
			return st, err
		}
	}
	if opts.Embedded {
		st.Notifier.SetEnabled(true)
	}
	return st, st.startTiles(ctx, o, opts)
}

func (opts Options) withDefaults() Options {
	if opts.Env == nil {
		opts.Env = config.OS
	}
	if opts.S3Addr == "" {
		opts.S3Addr = DefaultS3Addr
	}
	if opts.SeedMaxZoom == 0 {
		opts.SeedMaxZoom = demotiles.DefaultMaxZoom
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts
}

// configure sets st.Tiles: the environment's configuration over the local
// stack's defaults, and, with the embedded S3, under the endpoint and
// bucket of that S3, whose listener it opens (ln; nil otherwise). It
// returns the environment the tile function and the worker read.
func (st *Stack) configure(ctx context.Context, opts Options) (env config.Env, ln net.Listener, err error) {
	defaults := map[string]string{"DISK_CACHE_BYTES": DefaultDiskBytes, "REVALIDATE_AFTER": DefaultRevalidateAfter}
	if strings.TrimSpace(opts.Env("DISK_CACHE_DIR")) == "" {
		dir, err := os.MkdirTemp("", "tilesieve-devstack-")
		if err != nil {
			return nil, nil, fmt.Errorf("disk tier directory: %w", err)
		}
		st.closers = append(st.closers, func(context.Context) error { return os.RemoveAll(dir) })
		defaults["DISK_CACHE_DIR"] = dir
	}
	overrides := map[string]string{}
	st.Region = firstNonEmpty(opts.Env("AWS_REGION"), opts.Env("AWS_DEFAULT_REGION"), s3local.DefaultRegion)
	if opts.Embedded {
		if ln, err = st.listenS3(opts, defaults, overrides); err != nil {
			return nil, nil, err
		}
	} else if st.Region, err = checkAWS(ctx, opts.Env("TILES_BUCKET"), st.log); err != nil {
		// Found now, the problem is one line; found by the first request, it
		// is a running stack that answers 502 (or an SDK error about DNS
		// names when the region is missing).
		return nil, nil, err
	}
	env = layered(overrides, opts.Env, defaults)
	if st.Tiles, err = config.LoadTiles(env); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, nil, err
	}
	return env, ln, nil
}

// listenS3 opens the embedded endpoint's listener and sets the variables
// the embedded S3 decides (overrides) or suggests (defaults).
func (st *Stack) listenS3(opts Options, defaults, overrides map[string]string) (net.Listener, error) {
	for _, v := range s3Variables {
		if strings.TrimSpace(opts.Env(v)) != "" {
			st.IgnoredEnv = append(st.IgnoredEnv, v)
		}
	}
	if len(st.IgnoredEnv) > 0 {
		st.log.Warn("the embedded S3 is on: these variables are not used (-embedded=false uses them)", "vars", strings.Join(st.IgnoredEnv, ","))
	}
	defaults["TILES_PREFIX"] = DefaultPrefix
	defaults["ADMIN_TOKEN"] = DefaultAdminToken
	ln, err := net.Listen("tcp", opts.S3Addr)
	if err != nil {
		return nil, fmt.Errorf("S3 endpoint: %w (set S3_LOCAL_PORT or -s3-port to use another port)", err)
	}
	st.S3URL = "http://" + ln.Addr().String()
	overrides["TILES_BUCKET"] = DefaultBucket
	overrides["AWS_ENDPOINT_URL"] = st.S3URL
	overrides["S3_FORCE_PATH_STYLE"] = "true"
	return ln, nil
}

// startTiles builds the tile function over o and serves it, with the
// viewer, on opts.Addr (default LISTEN_ADDR:PORT).
func (st *Stack) startTiles(ctx context.Context, o *origin.Client, opts Options) (err error) {
	var tileOpts []app.Option
	if st.Worker != nil {
		// No queue here: the worker takes the tile function's admin purges
		// in process, as SQS messages all the same (workerapp.App.Handoff).
		tileOpts = append(tileOpts, app.WithHandoff(observedHandoff{h: st.Worker.Handoff(), on: opts.OnHandoff}))
	}
	if st.App, err = app.NewWithOrigin(ctx, st.Tiles, o, st.log.With("component", "tiles"), tileOpts...); err != nil {
		return fmt.Errorf("tile function: %w", err)
	}
	// Once the tile server has stopped, and while S3 still runs: the work
	// the tile function started beside its answers (journal checks, which
	// save the journal position in the disk tier's directory, and stale
	// copies' revalidations) ends, and the staged archives and databases
	// it holds open are closed, before S3 stops and that directory goes.
	st.closers = append(st.closers, func(context.Context) error { return st.App.Close() })

	tl, err := net.Listen("tcp", cmp.Or(opts.Addr, st.Tiles.ListenAddr))
	if err != nil {
		return fmt.Errorf("tile function: %w (set PORT or -port to use another port)", err)
	}
	st.URL = "http://" + tl.Addr().String()
	// Built once the URL is known: the page's commands carry it.
	page, err := viewer.Handler(viewer.Config{
		Title:    "tilesieve local stack",
		Template: "/" + demotiles.Tileset + "/{z}/{x}/{y}.png",
		MaxZoom:  max(opts.SeedMaxZoom, 0),
		Zoom:     min(2, max(opts.SeedMaxZoom, 0)),
		Hints:    st.hints(),
		Actions:  st.actions(),
		Image:    st.DemoImage,
	})
	if err != nil {
		tl.Close()
		return err
	}
	st.serve(tl, st.withActions(viewer.Mount(page, st.App.Handler)), "tiles")
	st.log.Info("tile function ready", "url", st.URL, "disk", st.App.Disk != nil, "sync_interval", st.Tiles.SyncInterval)
	return nil
}

// startS3 starts the embedded endpoint on ln, with notifications (off until
// the seed is written) delivered to a worker over the same bucket.
func (st *Stack) startS3(ctx context.Context, ln net.Listener, env config.Env, opts Options) error {
	wcfg, err := config.LoadWorker(env)
	if err != nil {
		ln.Close()
		return err
	}
	// The buckets of SOURCES too, each notifying of every change, as
	// the template's EventBridge rule does.
	buckets := wcfg.Table().Buckets()
	srv, err := s3local.New(s3local.Config{Buckets: buckets})
	if err != nil {
		ln.Close()
		return err
	}
	st.S3 = srv
	st.Client = srv.Client(st.S3URL)
	srv.Faults().Add(s3local.Fault{Match: st.outage.matches(wcfg.Bucket, wcfg.TilesPrefix), Status: http.StatusServiceUnavailable})

	if wcfg.DistributionID != "" {
		st.log.Warn("DISTRIBUTION_ID is set but the local stack has no CDN to invalidate; ignoring it")
		wcfg.DistributionID = ""
	}
	wopts := workerapp.Options{S3: st.Client, Logger: st.log.With("component", "worker")}
	if opts.CDN.Enabled() {
		// A CDN in the loop (tests): the worker waits SYNC_INTERVAL +
		// SYNC_TIMEOUT between the journal and the CDN, as deployed.
		wopts.CDN = opts.CDN
	} else {
		// No CDN, so there is nothing to settle for; zero says so, and keeps
		// the handed-over invalidations (delivered while the admin request
		// waits, see workerapp.App.Handoff) from holding it.
		var noSettle time.Duration
		wopts.SettleDelay = &noSettle
	}
	st.Worker, err = workerapp.New(ctx, wcfg, wopts)
	if err != nil {
		ln.Close()
		return err
	}

	st.Notifier = s3notify.New(srv.Handler(), s3notify.HeadStat(st.Client), workerTarget{st.Worker}, s3notify.Config{
		Region:     st.Region,
		Prefix:     wcfg.TilesPrefix, // the template's notification filter
		AllKeys:    buckets[1:],
		OnDelivery: opts.OnEvent,
		BatchSize:  opts.EventBatch,
	}, st.log.With("component", "s3-events"))
	st.Notifier.SetEnabled(false)
	// Stop order (closers run last first): tiles, then the event queue
	// drains while S3 is still up (the worker writes the journal there),
	// then S3.
	st.serve(ln, st.Notifier, "s3")
	st.closers = append(st.closers, func(ctx context.Context) error { return st.Notifier.Close(ctx) })
	st.log.Info("S3 endpoint ready", "url", st.S3URL, "bucket", wcfg.Bucket, "events_for", "s3://"+wcfg.Bucket+"/"+wcfg.TilesPrefix+"*")
	return nil
}

// seed writes the demo tileset and the demo image under TILES_PREFIX
// through c.
func (st *Stack) seed(ctx context.Context, c *s3.Client, maxZoom int) error {
	start := time.Now()
	n, err := demotiles.Seed(ctx, maxZoom, 8, func(ctx context.Context, key string, png []byte) error {
		_, err := s3local.Put(ctx, c, st.Tiles.Bucket, st.Tiles.TilesPrefix+key, png, "image/png", "")
		return err
	})
	st.Seeded = n
	if err != nil {
		return err
	}
	st.log.Info("demo tileset seeded", "tiles", n, "zoom", fmt.Sprintf("0-%d", maxZoom),
		"at", "s3://"+st.Tiles.Bucket+"/"+st.Tiles.TilesPrefix+demotiles.Tileset+"/", "took", time.Since(start).Round(time.Millisecond))
	key := st.Tiles.TilesPrefix + demoimage.Key
	if _, err := s3local.Put(ctx, c, st.Tiles.Bucket, key, demoimage.TIFF, upload.ContentType("tif"), ""); err != nil {
		return fmt.Errorf("demo image: %w", err)
	}
	st.DemoImage = demoimage.ID
	st.log.Info("demo image seeded", "at", "s3://"+st.Tiles.Bucket+"/"+key, "bytes", len(demoimage.TIFF),
		"viewer", viewer.IIIFPageOf(demoimage.ID))
	return nil
}

// load uploads one of the user's tilesets or images under TILES_PREFIX.
func (st *Stack) load(ctx context.Context, c *s3.Client, path string) error {
	name := tilename.TrimArchiveExt(filepath.Base(filepath.Clean(path)))
	dst := upload.Destination{Bucket: st.Tiles.Bucket, Prefix: st.Tiles.TilesPrefix, Name: name}
	rep, err := upload.Run(ctx, c, path, dst, upload.Options{})
	if err != nil {
		return fmt.Errorf("-tiles %s: %w", path, err)
	}
	image, tileset := false, true
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".tif" || ext == ".tiff" {
		if tileset, image, err = tiffKinds(ctx, path); err != nil {
			return fmt.Errorf("-tiles %s: %w", path, err)
		}
	}
	if image {
		st.Images = append(st.Images, name)
		st.log.Info("image loaded", "path", path, "id", name, "uploaded", rep.Uploaded, "skipped", rep.Skipped,
			"info", "/"+tilename.IIIFDir("3", name)+"info.json", "viewer", viewer.IIIFPageOf(name))
	}
	if tileset {
		st.Loaded = append(st.Loaded, name)
		st.log.Info("tileset loaded", "path", path, "name", name, "uploaded", rep.Uploaded, "skipped", rep.Skipped, "tilejson", "/"+tilename.TileJSONKey(name))
	}
	return nil
}

// tiffKinds reads what the TIFF at path is served as: a map tileset when it
// is georeferenced, an IIIF image when its samples are colours (a float
// elevation model is a tileset only).
func tiffKinds(ctx context.Context, path string) (tileset, image bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, false, err
	}
	tf, err := tiff.Open(ctx, tiff.ReaderAt(f), st.Size(), tiff.Options{})
	if err != nil {
		return false, false, err
	}
	_, err = tf.Georeferencing()
	return err == nil, tf.Levels[0].Bits == 8, nil
}

// serve runs h on ln until Close.
func (st *Stack) serve(ln net.Listener, h http.Handler, name string) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// The largest tile at 64 KiB/s, as the tile function's own server:
		// a client reading a byte a second does not hold its connection.
		WriteTimeout: st.Tiles.WriteTimeout(),
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(st.log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			st.log.Error("server stopped", "server", name, "err", err)
		}
	}()
	st.closers = append(st.closers, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		if err != nil {
			return fmt.Errorf("stop %s server: %w", name, err)
		}
		return nil
	})
}

// Close stops the stack: the tile server first, then the tile function's
// background work ends, then the queued S3 events are delivered, then the
// S3 endpoint stops and the disk tier's temporary directory is removed. ctx
// bounds the stop of the servers and of the event queue.
func (st *Stack) Close(ctx context.Context) error {
	var errs []error
	for i := len(st.closers) - 1; i >= 0; i-- {
		if err := st.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	st.closers = nil
	if len(errs) > 0 {
		return fmt.Errorf("devstack: stop: %w", errors.Join(errs...))
	}
	return nil
}

// exampleTile is the demo tile the printed commands change: one at zoom 2,
// or at the deepest seeded zoom if that is less.
func exampleTile(maxZoom int) (z, x, y int) {
	z = min(2, max(maxZoom, 0))
	x = min(1, (1<<z)-1)
	return z, x, x
}

// TileURL is the URL of a demo tile.
func (st *Stack) TileURL(z, x, y int) string {
	return st.URL + "/" + demotiles.Key(z, x, y)
}

// layered reads a variable from overrides, then env, then defaults.
func layered(overrides map[string]string, env config.Env, defaults map[string]string) config.Env {
	return func(name string) string {
		if v, ok := overrides[name]; ok {
			return v
		}
		if v := strings.TrimSpace(env(name)); v != "" {
			return v
		}
		return defaults[name]
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// workerTarget delivers the S3 notifications to the worker's Lambda handler.
type workerTarget struct{ w *workerapp.App }

func (t workerTarget) Handle(ctx context.Context, event json.RawMessage) (any, error) {
	return t.w.Handle(ctx, workerapp.Event(event))
}

// observedHandoff is the worker's in-process handoff with a hook (tests).
type observedHandoff struct {
	h  purge.Handoff
	on func(purge.Invalidation, error)
}

func (o observedHandoff) Hand(ctx context.Context, inv purge.Invalidation) error {
	err := o.h.Hand(ctx, inv)
	if o.on != nil {
		o.on(inv, err)
	}
	return err
}
