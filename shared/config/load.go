package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Common holds the settings both functions share.
type Common struct {
	Bucket        string
	TilesPrefix   string
	Endpoint      string
	PathStyle     bool
	JournalPrefix string
	LogLevel      string
	SyncInterval  time.Duration
	SyncTimeout   time.Duration
	// Sources are the tilesets read from other buckets or prefixes
	// (SOURCES), in the order given; the rest come from Bucket under
	// TilesPrefix.
	Sources []sources.Source
}

// Tiles is the tile function's configuration.
type Tiles struct {
	Common
	MemBytes             int64
	DiskDir              string
	DiskBytes            int64 // 0 with DiskAuto: choose from the free space
	DiskAuto             bool
	DiskFsync            bool
	StagePrefixes        []string
	StageManifest        string
	StageBudget          time.Duration
	CacheControl         string
	NegativeCacheControl string
	StaleCacheControl    string
	CORSAllowOrigins     string
	PublicURL            string
	CDNSecret            string
	MissingTile          string // "404", "204" or "empty"
	RevalidateAfter      time.Duration
	OriginTimeout        time.Duration
	MaxTileBytes         int64
	MaxOriginFetches     int
	// IIIF bounds the answers of images served as IIIF.
	IIIF                IIIF
	OriginFailureWindow time.Duration
	OutageStale         bool // serve held copies stale when neither the journal nor S3 answers
	AdminToken          string
	PurgeQueueURL       string // the worker's queue, for admin purges' CDN invalidations; "" hands none over
	InvokeMode          string // "BUFFERED" or "RESPONSE_STREAM"
	ListenAddr          string // host:port off Lambda
	OnLambda            bool
	FunctionMemoryBytes int64 // from AWS_LAMBDA_FUNCTION_MEMORY_SIZE; 0 off Lambda
	Metrics             Metrics
}

// Worker is the sync worker's configuration.
type Worker struct {
	Common
	// DistributionID and CDNPathPrefix are the worker's alone: only the
	// worker talks to the CDN (the tile function hands its admin purges'
	// invalidations to it through PurgeQueueURL).
	DistributionID    string
	CDNPathPrefix     string
	CoalesceThreshold int
	CoalesceCap       int
	Metrics           Metrics // Enabled and Namespace; the worker writes once per invocation
}

// DefaultMemBytesOffLambda is the memory tier's size when neither
// MEM_CACHE_BYTES nor the Lambda memory size says otherwise.
const DefaultMemBytesOffLambda = 256 << 20

func (r *reader) common() Common {
	bucket, _ := r.lookup(varBucket.Name) // required: its Default is a word for the documentation
	c := Common{
		Bucket:        bucket,
		TilesPrefix:   r.str(varPrefix),
		Endpoint:      r.str(varEndpoint),
		PathStyle:     r.bool(varPathStyle),
		JournalPrefix: r.str(varJournal),
		LogLevel:      strings.ToLower(r.str(varLogLevel)),
		SyncInterval:  r.duration(varSyncInterval),
		SyncTimeout:   r.duration(varSyncTimeout),
	}
	if c.SyncInterval <= 0 {
		r.fail("SYNC_INTERVAL must be positive")
	}
	if c.SyncTimeout <= 0 {
		r.fail("SYNC_TIMEOUT must be positive")
	}
	if c.Bucket == "" {
		r.fail("TILES_BUCKET is required")
	}
	if c.TilesPrefix != "" && tile.ValidateDir(c.TilesPrefix) != nil {
		r.fail("TILES_PREFIX=%q: must be empty or a directory ending in /", c.TilesPrefix)
	}
	if tile.ValidateDir(c.JournalPrefix) != nil {
		r.fail("JOURNAL_PREFIX=%q: must be a directory ending in /", c.JournalPrefix)
	}
	r.checkEndpoint(c.Endpoint)
	c.Sources = r.sources(c)
	if c.TilesPrefix != "" && strings.HasPrefix(c.JournalPrefix, c.TilesPrefix) {
		// The worker's own journal writes would trigger the worker. (With an
		// empty TILES_PREFIX the worker skips journal keys itself, and the
		// handler reserves the _tilesieve/ path space.)
		r.fail("JOURNAL_PREFIX=%q is inside TILES_PREFIX=%q: the journal must live outside the tiles", c.JournalPrefix, c.TilesPrefix)
	}
	if c.TilesPrefix == "" && !tile.Reserved(c.JournalPrefix) {
		// Every other key would be a tile key: the journal would be served.
		r.fail("JOURNAL_PREFIX=%q with an empty TILES_PREFIX: must be under the reserved %s, or the journal is served as a tile", c.JournalPrefix, tile.ReservedPrefix)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		r.fail("LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel)
	}
	return c
}

func (r *reader) checkEndpoint(endpoint string) {
	if endpoint != "" {
		if _, ok := httpurl.Parse(endpoint); !ok {
			r.fail("AWS_ENDPOINT_URL=%q: want an http or https URL", endpoint)
		}
	}
}

// S3 is how a command that is not one of the functions (the upload command)
// reaches S3: the same variables the functions read, and no bucket, since
// the command names its own.
type S3 struct {
	Region    string // AWS_REGION; "" leaves it to the SDK's shared config
	Endpoint  string // AWS_ENDPOINT_URL
	PathStyle bool   // S3_FORCE_PATH_STYLE
}

// LoadS3 reads the S3 settings of a command from env.
func LoadS3(env Env) (S3, error) {
	r := &reader{env: env}
	c := S3{
		Region:    r.str(varRegion),
		Endpoint:  r.str(varEndpoint),
		PathStyle: r.bool(varPathStyle),
	}
	r.checkEndpoint(c.Endpoint)
	return c, r.err("S3")
}

// Table is the routing table of the tile keys: Sources over the default
// source, TILES_BUCKET under TILES_PREFIX.
func (c Common) Table() *sources.Table {
	return sources.New(sources.Default{Bucket: c.Bucket, Prefix: c.TilesPrefix}, c.Sources)
}

// LoadTiles reads the tile function's configuration from env.
func LoadTiles(env Env) (Tiles, error) {
	r := &reader{env: env}
	t := Tiles{
		Common:               r.common(),
		DiskDir:              r.str(varDiskDir),
		DiskFsync:            r.bool(varDiskFsync),
		StagePrefixes:        r.list(varStagePrefixes),
		StageManifest:        r.str(varStageManifest),
		StageBudget:          r.duration(varStageBudget),
		CacheControl:         r.str(varCacheControl),
		NegativeCacheControl: r.str(varNegativeCacheControl),
		StaleCacheControl:    r.str(varStaleCacheControl),
		CORSAllowOrigins:     r.str(varCORS),
		PublicURL:            r.str(varPublicURL),
		CDNSecret:            r.str(varCDNSecret),
		MissingTile:          strings.ToLower(r.str(varMissingTile)),
		RevalidateAfter:      r.duration(varRevalidateAfter),
		OriginTimeout:        r.duration(varOriginTimeout),
		MaxOriginFetches:     r.int(varMaxOriginFetches),
		IIIF:                 r.iiif(),
		OriginFailureWindow:  r.duration(varOriginFailureWindow),
		OutageStale:          r.bool(varOutageStale),
		AdminToken:           r.str(varAdminToken),
		PurgeQueueURL:        r.str(varPurgeQueueURL),
		InvokeMode:           strings.ToUpper(r.str(varInvokeMode)),
		OnLambda:             r.str(varRuntimeAPI) != "",
		Metrics:              r.metrics(true),
	}
	if t.MaxTileBytes = r.size(varMaxTileBytes); t.MaxTileBytes < 1<<10 {
		r.fail("MAX_TILE_BYTES=%d: want at least 1KiB", t.MaxTileBytes)
	}
	if t.PurgeQueueURL != "" {
		if u, ok := httpurl.Parse(t.PurgeQueueURL); !ok || len(u.Path) < 2 {
			r.fail("PURGE_QUEUE_URL=%q: want the queue's URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)", t.PurgeQueueURL)
		}
	}
	if t.MaxOriginFetches < 1 {
		r.fail("MAX_ORIGIN_FETCHES must be at least 1")
	}
	if t.OriginFailureWindow < 0 {
		r.fail("ORIGIN_FAILURE_WINDOW must not be negative")
	}
	r.memory(&t)
	r.renderBytes(&t)
	if n, ok := r.bytes(varDiskBytes); ok {
		t.DiskBytes = n
	} else {
		t.DiskAuto = true
	}
	switch t.MissingTile {
	case "404", "204", "empty":
	default:
		r.fail("MISSING_TILE=%q: want 404, 204 or empty", t.MissingTile)
	}
	switch t.InvokeMode {
	case "BUFFERED", "RESPONSE_STREAM":
	default:
		r.fail("INVOKE_MODE=%q: want BUFFERED or RESPONSE_STREAM", t.InvokeMode)
	}
	if t.OriginTimeout <= 0 {
		r.fail("ORIGIN_TIMEOUT must be positive")
	}
	if t.PublicURL != "" {
		if _, err := httpurl.Base(t.PublicURL); err != nil {
			r.fail("PUBLIC_URL=%q: %s, such as https://tiles.example.com", t.PublicURL, httpurl.WantBase)
		}
	}
	r.stagePrefixes(t)
	port := r.int(varPort)
	if port == 0 || port > 65535 {
		r.fail("PORT=%d: want 1-65535", port)
	}
	host := r.str(varListenAddr)
	t.ListenAddr = joinHostPort(host, port)
	return t, r.err("tile function")
}

// LoadWorker reads the sync worker's configuration from env.
func LoadWorker(env Env) (Worker, error) {
	r := &reader{env: env}
	w := Worker{
		Common:            r.common(),
		DistributionID:    r.str(varDist),
		CDNPathPrefix:     r.str(varCDNPrefix),
		CoalesceThreshold: r.int(varCoalesceThreshold),
		CoalesceCap:       r.int(varCoalesceCap),
		Metrics:           r.metrics(false),
	}
	if w.CDNPathPrefix != "" && tile.ValidatePrefix(strings.TrimPrefix(w.CDNPathPrefix, "/")) != nil {
		r.fail("CDN_PATH_PREFIX=%q: not a valid path prefix", w.CDNPathPrefix)
	}
	if w.CoalesceThreshold < 1 {
		r.fail("COALESCE_THRESHOLD must be at least 1")
	}
	if w.CoalesceCap < 1 || w.CoalesceCap > 3000 {
		r.fail("COALESCE_CAP=%d: want 1-3000 (CloudFront takes at most 3000 paths per invalidation)", w.CoalesceCap)
	}
	return w, r.err("sync worker")
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// Metrics is how a function writes its CloudWatch EMF metrics (LoadTiles
// and LoadWorker fill it in). The worker writes once per invocation, so
// Interval and MaxTileSets are the tile function's alone.
type Metrics struct {
	Enabled     bool
	Namespace   string
	Interval    time.Duration
	MaxTileSets int // tilesets with a TileSet dimension of their own; 0: none
}

// MetricsVars lists the variables LoadMetrics reads: all four are the tile
// function's (TilesVars), the first two the worker's too (WorkerVars).
func MetricsVars() []Var {
	return []Var{varMetrics, varMetricsNamespace, varMetricsInterval, varMetricsTileSets}
}

// LoadMetrics reads the tile function's metrics settings from env, as
// LoadTiles does.
func LoadMetrics(env Env) (Metrics, error) {
	r := &reader{env: env}
	m := r.metrics(true)
	return m, r.err("metrics")
}

// metrics reads METRICS and METRICS_NAMESPACE, and with perInstance the
// tile function's METRICS_INTERVAL and METRICS_TILESETS.
func (r *reader) metrics(perInstance bool) Metrics {
	m := Metrics{
		Enabled:   r.bool(varMetrics),
		Namespace: r.str(varMetricsNamespace),
		Interval:  mustDefault(varMetricsInterval, time.ParseDuration),
	}
	if len(m.Namespace) > 1024 {
		r.fail("METRICS_NAMESPACE: at most 1024 characters")
	}
	if !perInstance {
		return m
	}
	m.Interval = r.duration(varMetricsInterval)
	m.MaxTileSets = r.int(varMetricsTileSets)
	if m.Interval < time.Second {
		r.fail("METRICS_INTERVAL=%v: want at least 1s", m.Interval)
	}
	if m.MaxTileSets > 100 {
		r.fail("METRICS_TILESETS=%d: want at most 100 (each is a line per interval and a set of CloudWatch metrics)", m.MaxTileSets)
	}
	return m
}

// minClientRate is the slowest a client may read the largest tile from a
// local server before it is dropped.
const minClientRate = 64 << 10 // bytes per second

// WriteTimeout bounds writing one answer off Lambda: the largest tile
// (MAX_TILE_BYTES) at 64 KiB/s, never less than 30 s. Without it, clients
// reading at a byte a second hold their connections indefinitely.
func (t Tiles) WriteTimeout() time.Duration {
	return max(30*time.Second, time.Duration(t.MaxTileBytes/minClientRate)*time.Second)
}

// StaleIfError is how long past REVALIDATE_AFTER a copy may still be
// answered when S3 fails: CACHE_CONTROL's stale-if-error.
func (t Tiles) StaleIfError() time.Duration {
	return directiveSeconds(t.CacheControl, "stale-if-error")
}

// NegativeTTL is how long an instance remembers a 404: as long as the CDN
// may cache it (NEGATIVE_CACHE_CONTROL's max-age), and never past the
// revalidation age; the journal purges it on upload either way.
func (t Tiles) NegativeTTL() time.Duration {
	return min(directiveSeconds(t.NegativeCacheControl, "max-age"), t.RevalidateAfter)
}

// directiveSeconds reads a delta-seconds directive from a Cache-Control
// value; 0 when it is absent or not a count of seconds.
func directiveSeconds(cc, name string) time.Duration {
	for part := range strings.SplitSeq(cc, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !strings.EqualFold(k, name) {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(v, `"`))
		if err != nil || n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

// memory reads the function's memory and the memory tier's bound, half of
// it unless MEM_CACHE_BYTES says otherwise.
func (r *reader) memory(t *Tiles) {
	if mb, ok := r.lookup(varFunctionMemory.Name); ok {
		n, err := strconv.ParseInt(mb, 10, 64)
		if err != nil || n <= 0 {
			r.fail("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%q: want megabytes", mb)
		} else {
			t.FunctionMemoryBytes = n << 20
		}
	}
	if n, ok := r.bytes(varMemBytes); ok {
		t.MemBytes = n
	} else if t.FunctionMemoryBytes > 0 {
		t.MemBytes = t.FunctionMemoryBytes / 2
	} else {
		t.MemBytes = DefaultMemBytesOffLambda
	}
	if t.MemBytes < 1<<20 {
		r.fail("MEM_CACHE_BYTES=%d: want at least 1MiB", t.MemBytes)
	}
	if t.FunctionMemoryBytes > 0 && t.MemBytes > t.FunctionMemoryBytes*3/4 {
		r.fail("MEM_CACHE_BYTES=%d leaves too little of the function's %d bytes for the runtime", t.MemBytes, t.FunctionMemoryBytes)
	}
}

// stagePrefixes checks STAGE_PREFIXES: tile-key prefixes, and in a
// tileset of SOURCES only its archive.
func (r *reader) stagePrefixes(t Tiles) {
	routed := map[string]sources.Source{}
	for _, src := range t.Sources {
		routed[src.Name] = src
	}
	for _, p := range t.StagePrefixes {
		if err := tile.ValidatePrefix(p); err != nil {
			r.fail("STAGE_PREFIXES: %v", err)
		}
		name := sources.Name(p)
		src, ok := routed[name]
		switch {
		case !ok:
		case strings.Contains(p, "/"):
			// Staging lists TILES_BUCKET; a source's archive is staged
			// through the source (NAME.pmtiles, NAME.mbtiles).
			r.fail("STAGE_PREFIXES: %q is in the tileset %s of SOURCES: only its archive (%s.pmtiles or %s.mbtiles) can be staged", p, name, name, name)
		case p != name+src.ArchiveExt():
			r.fail("STAGE_PREFIXES: %q: the tileset %s of SOURCES is s3://%s/%s, which has no such archive", p, name, src.Bucket, src.Prefix)
		}
	}
}

// IIIF is the bounds of IIIF answers.
type IIIF struct {
	MaxWidth, MaxHeight, MaxArea, MaxDecodedPixels int64
	Decoders                                       int
	// RenderBytes bounds the pixels of the answers being made at once.
	RenderBytes int64
}

// DefaultRenderBytesOffLambda is IIIF_RENDER_BYTES off Lambda, unless it
// says otherwise; on Lambda the default is a quarter of the function's
// memory (the memory tier takes half).
const DefaultRenderBytesOffLambda = 128 << 20

// renderBytes reads IIIF_RENDER_BYTES, once the function's memory is read.
func (r *reader) renderBytes(t *Tiles) {
	switch n, ok := r.bytes(varIIIFRenderBytes); {
	case ok:
		t.IIIF.RenderBytes = n
	case t.FunctionMemoryBytes > 0:
		t.IIIF.RenderBytes = t.FunctionMemoryBytes / 4
	default:
		t.IIIF.RenderBytes = DefaultRenderBytesOffLambda
	}
	if t.IIIF.RenderBytes < 1<<20 {
		r.fail("IIIF_RENDER_BYTES=%d: want at least 1MiB", t.IIIF.RenderBytes)
	}
}

// AnswerBytes is the largest body the function can answer with: what a
// buffered function-URL payload holds on Lambda (6 MB, the body base64),
// else MAX_TILE_BYTES. An IIIF answer is made within it.
func (t Tiles) AnswerBytes() int64 {
	if t.OnLambda && t.InvokeMode != "RESPONSE_STREAM" {
		return min(t.MaxTileBytes, BufferedBodyBytes)
	}
	return t.MaxTileBytes
}

// BufferedPayloadBytes is Lambda's limit on a buffered response payload;
// BufferedBodyBytes the largest binary body whose payload fits it (base64
// makes a body 4/3 larger; 8 KiB is left for the status and headers).
const (
	BufferedPayloadBytes = 6 * 1024 * 1024
	BufferedBodyBytes    = (BufferedPayloadBytes - 8*1024) / 4 * 3
)

// iiif reads the IIIF bounds, each at least 1.
func (r *reader) iiif() IIIF {
	c := IIIF{
		MaxWidth: int64(r.int(varIIIFMaxWidth)), MaxHeight: int64(r.int(varIIIFMaxHeight)),
		MaxArea: int64(r.int(varIIIFMaxArea)), MaxDecodedPixels: int64(r.int(varIIIFMaxDecoded)),
		Decoders: r.int(varIIIFDecoders),
	}
	if c.MaxWidth < 1 || c.MaxHeight < 1 || c.MaxArea < 1 || c.MaxDecodedPixels < 1 || c.Decoders < 1 {
		r.fail("IIIF_MAX_WIDTH, IIIF_MAX_HEIGHT, IIIF_MAX_AREA, IIIF_MAX_DECODED_PIXELS and IIIF_DECODERS must be at least 1")
	}
	return c
}
