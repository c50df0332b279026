// Package archive serves tilesets stored as one object, as an origin of the
// tier engine: an object of any format of shared/formats (NAME.pmtiles,
// read by range and pinned to its ETag; NAME.mbtiles, staged whole to local
// disk) is the tileset NAME/ with its TileJSON at NAME.json; every other key
// goes on to the object origin. A tileset's tiles land in the
// same tiers under the same keys whichever way it is stored, so purges,
// revalidation and staleness treat them alike. A change of the file under
// a read drops the tileset on this instance (Deps.Purge); a purge of the
// file or its tileset makes the origin open it afresh (Forget).
package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/registry"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// Store is the S3 access archives and the catalog need beside the object
// origin: ranged reads pinned to an ETag, a HEAD, one level of listing.
// *origin.Client is one.
type Store interface {
	GetRange(ctx context.Context, objectKey string, off, n int64, ifMatch string) (*origin.Range, error)
	Head(ctx context.Context, key string) (*tile.Tile, error)
	Prefixes(ctx context.Context, dir string, max int) ([]string, []origin.ObjectInfo, error)
	ObjectKey(tileKey string) string
	// MaxObjectBytes is MAX_TILE_BYTES (zero or negative: off): an archive
	// tile larger than it is refused from its directory entry, unread.
	MaxObjectBytes() int64
}

// Defaults of the archive origin.
const (
	// DefaultTTL is how long "NAME.pmtiles does not exist" is believed, and
	// how long an archive's ETag counts as checked for the revalidation of
	// its tiles.
	DefaultTTL = time.Minute
	// DefaultDirectoryBytes bounds the leaf directory cache when Deps
	// gives none.
	DefaultDirectoryBytes = 16 << 20
)

// Config is the archive origin's behaviour.
type Config struct {
	TTL           time.Duration // see DefaultTTL; zero: DefaultTTL
	OriginTimeout time.Duration // bounds one probe of a name; zero: tiers.DefaultOriginTimeout
	Now           func() time.Time
	// MaxNames bounds the tileset names remembered; zero: MaxNames. Tests
	// set a small one to reach the bound with few requests.
	MaxNames int
}

// Deps are the parts the archive origin reads through. Next and Store are
// required.
type Deps struct {
	Next  tiers.Origin // object tilesets
	Store Store
	// Formats opens each format of formats.Table by its name; nil: the
	// registry's (shared/formats/registry).
	Formats func(name string) (formats.Opener, bool)
	// Stager copies objects of the formats read whole (formats.Whole, as
	// MBTiles) to local disk; nil: those formats are off.
	Stager Stager
	// Directories keeps decoded leaf directories; nil: a cache of
	// DefaultDirectoryBytes.
	Directories *memory.Cache
	// Decode decodes a body stored with a content coding (a gzip
	// metadata.json), returning it as it is for a coding it does not
	// decode; nil: bodies are read as stored.
	Decode func(enc string, b []byte) ([]byte, error)
	Logger *slog.Logger
}

// Origin is the origin the tier engine reads from when archives are on: a
// key whose first segment names an archive (NAME.pmtiles exists) or a
// database (NAME.mbtiles) is read from it; every other key goes to the
// object origin. Tiles of both kinds land in the same tiers under the same
// keys. It is safe for concurrent use.
type Origin struct {
	next  tiers.Origin
	store Store
	// dirs holds decoded leaf directories (by archive, version and range)
	// and refusals of tiles past MAX_TILE_BYTES (refusedPrefix), all
	// charged to its byte bound.
	dirs          *memory.Cache
	ttl           time.Duration
	originTimeout time.Duration
	now           func() time.Time
	decode        func(enc string, b []byte) ([]byte, error)
	purgeTiers    func(prefix string)
	trusted       func(storedAt, now time.Time) bool
	log           *slog.Logger

	mu    sync.Mutex // guards names, nextPrune and local
	names map[string]*archive
	// nextPrune is the size of names at which lookup prunes it next.
	nextPrune int
	maxNames  int                  // Config.MaxNames
	local     map[string]localCopy // staged archives, by name
	stager    Stager               // stages Whole formats; nil: they are off
	formats   []format             // what this origin serves, in order of precedence

	// base is the context of every probe and staging: Close cancels it.
	base context.Context
	stop context.CancelFunc
	// closed is set by Close (a.mu held): no probe starts after it.
	closed bool
	// closing counts the closes of forgotten names' databases.
	closing sync.WaitGroup
}

// ErrClosed answers a request that reaches the origin after Close.
var ErrClosed = errors.New("archive: origin closed")

// maxNames bounds the tileset names remembered. Past it, names settled as
// "not an archive" (or malformed) are dropped, those past the TTL first:
// any first path segment makes a name, and a client sending many must not
// grow the heap outside the tiers' bound. A dropped name costs one probe
// again, beside its object read.
const maxNames = 4096

// MaxNames is the bound on the tileset names remembered (Names).
const MaxNames = maxNames

// localCopy is an archive staged to the disk directory: its tiles are read
// from the file while its ETag is the one in S3.
type localCopy struct {
	etag string
	src  formats.RangeReader
}

// format is a format this origin serves.
type format struct {
	spec formats.Spec
	open formats.Opener
}

// archive is what one tileset name resolved to at checked: an object of a
// format opened at version etag (ds), or none (missing). ready is closed
// once the probe that made it ends; err is that probe's failure.
type archive struct {
	name         string // the tileset, or the image when image is set
	image        bool   // an IIIF image: probed for the formats of images
	mapKey       string // its key in Origin.names
	ready        chan struct{}
	checked      atomic.Int64 // UnixNano of the last time S3 confirmed what this is
	missing      bool
	err          error
	spec         formats.Spec // the format of the object found
	ds           formats.Dataset
	etag         string
	lastModified time.Time
}

// objectKey is the tile key of ar's object: NAME + its format's extension.
func (ar *archive) objectKey() string { return ar.name + ar.spec.Ext }

// Engine is the tier engine the origin serves: an archive that changed
// under a read drops its tileset through Purge (which must reach Forget, as
// OnPurge makes every purge of this instance do, so the new version is
// opened); Trusted reports whether what S3 said at storedAt may still be
// relied on at now (the engine's journal follower vouches for it), so a
// version checked when the follower no longer vouches for is checked again
// before a revalidation is answered from it, whatever the TTL.
// *tiers.Engine is one.
type Engine interface {
	Purge(prefix string) (int, error)
	Trusted(storedAt, now time.Time) bool
	OnPurge(fn func(prefix string))
}

// Follow serves eng: every purge of eng reaches Forget, and a changed
// archive is dropped through it. The engine reads from this origin, so it
// is set here, once, before the first request. Without it, a changed
// archive is only forgotten, and the TTL alone decides when a version is
// checked again.
func (a *Origin) Follow(eng Engine) {
	eng.OnPurge(a.Forget)
	a.purgeTiers = func(prefix string) { _, _ = eng.Purge(prefix) }
	a.trusted = eng.Trusted
}

// New builds the archive origin.
func New(cfg Config, d Deps) (*Origin, error) {
	if d.Next == nil || d.Store == nil {
		return nil, errors.New("archive: Next and Store are required")
	}
	dirs := d.Directories
	if dirs == nil {
		var err error
		if dirs, err = memory.New(memory.Config{MaxBytes: DefaultDirectoryBytes}); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
	}
	a := &Origin{
		next: d.Next, store: d.Store, dirs: dirs, stager: d.Stager,
		ttl: cmp.Or(cfg.TTL, DefaultTTL), originTimeout: cmp.Or(cfg.OriginTimeout, tiers.DefaultOriginTimeout),
		now: cfg.Now, decode: d.Decode, log: d.Logger,
		names: map[string]*archive{}, local: map[string]localCopy{},
		maxNames: defaults.Positive(cfg.MaxNames, maxNames),
	}
	a.nextPrune = a.maxNames
	open := d.Formats
	if open == nil {
		open = registry.Opener
	}
	for _, spec := range formats.Table {
		o, ok := open(spec.Name)
		if ok && (spec.Staging != formats.Whole || a.stager != nil) {
			a.formats = append(a.formats, format{spec, o})
		}
	}
	a.base, a.stop = context.WithCancel(context.Background())
	if a.ttl < 0 {
		a.ttl = DefaultTTL
	}
	a.now, a.log = defaults.Clock(a.now), defaults.Logger(a.log)
	if a.decode == nil {
		a.decode = func(_ string, b []byte) ([]byte, error) { return b, nil }
	}
	a.purgeTiers = a.Forget
	return a, nil
}

// purge drops prefix from this instance's tiers.
func (a *Origin) purge(prefix string) { a.purgeTiers(prefix) }

// TTL is how long a name's probe is believed (Config.TTL).
func (a *Origin) TTL() time.Duration { return a.ttl }

// Store is the S3 access the origin reads archives through.
func (a *Origin) Store() Store { return a.store }

// Serves reports whether objects of the format called name are served (a
// format read whole is off without a Stager).
func (a *Origin) Serves(name string) bool {
	for _, f := range a.formats {
		if f.spec.Name == name {
			return true
		}
	}
	return false
}

// Names is how many tileset names the origin remembers (at most
// Config.MaxNames).
func (a *Origin) Names() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.names)
}

// refusedPrefix keys a remembered refusal of a tile past MAX_TILE_BYTES in
// the directory cache: no tile key starts with a NUL, and a purge of a
// prefix drops the refusals under it (forget).
const refusedPrefix = "\x00too-large\x00"

// refusal is a remembered ErrTooLarge, held for the archive TTL.
type refusal struct{ err error }

// Cost implements tile.Prepared: the error value and its message.
func (r refusal) Cost() int64 { return 64 + tile.AllocBytes(len(r.err.Error())) }

// Get implements Origin. A tile found larger than MAX_TILE_BYTES (an object
// by its Content-Length, an archive tile by its directory entry) is refused
// again from memory for the TTL: no S3 request, no read.
func (a *Origin) Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	if c, ok := a.dirs.Get(refusedPrefix + key); ok {
		if r, ok := c.Prepared.(refusal); ok && a.now().Sub(c.StoredAt) < a.ttl {
			return nil, r.err
		}
	}
	t, err := a.get(ctx, key, ifNoneMatch)
	if t != nil {
		t.ContentType = origin.ContentTypeFor(key, t.ContentType)
	}
	if errors.Is(err, tile.ErrTooLarge) {
		a.dirs.Set(refusedPrefix+key, &tile.Tile{StoredAt: a.now(), Prepared: refusal{err}})
	}
	return t, err
}

func (a *Origin) get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	name, rest, nested := strings.Cut(key, "/")
	if !nested {
		// NAME.json is a TileJSON only where NAME could be a tileset: ".."
		// of "..json" is no directory (its metadata.json is no key), so
		// that object is read as itself.
		if n, ok := strings.CutSuffix(key, ".json"); ok && tile.ValidateKey(n) == nil {
			return a.tileJSON(ctx, n, key, ifNoneMatch)
		}
		return a.next.Get(ctx, key, ifNoneMatch)
	}
	tr, ok := parseTileRequest(rest)
	if !ok {
		return a.next.Get(ctx, key, ifNoneMatch)
	}
	for attempt := 0; ; attempt++ {
		ar, obj, err := a.resolve(ctx, name, func(ctx context.Context) (*tile.Tile, error) { return a.next.Get(ctx, key, ifNoneMatch) })
		if err != nil || ar == nil {
			return obj, err
		}
		if ifNoneMatch == "" && a.trusted != nil && !a.trusted(a.checkedAt(ar), a.now()) {
			// The journal no longer vouches for the version checked: a
			// staged copy is read without asking S3, so S3 is asked
			// first whether it is still the archive's (a revalidation
			// asks in notModified).
			if _, err := a.current(ctx, ar); err != nil {
				if attempt == 0 && errors.Is(err, tile.ErrPreconditionFailed) {
					a.changed(ar)
					continue
				}
				return nil, err
			}
		}
		t, err := a.readTile(ctx, ar, tr, ifNoneMatch)
		if attempt == 0 && errors.Is(err, tile.ErrPreconditionFailed) {
			a.changed(ar)
			continue
		}
		return t, err
	}
}

// resolve finds what name is: an archive (returned), or not one, and then
// the object origin's answer for the key (obj, err from objects). When name
// must be probed, the probe (a ranged GET of the archive's first 16 KiB,
// which is also its header and root directory) and the object read run side
// by side, so a miss of an object tileset costs no extra round trip. When
// the name turns out to be an archive, or the caller gives up, the object
// read is cancelled and waited for: no S3 request of it goes out after the
// answer (on Lambda the environment is frozen once the answer is out), and
// an object under the archive's name is not downloaded for nothing.
func (a *Origin) resolve(ctx context.Context, name string, objects func(context.Context) (*tile.Tile, error)) (*archive, *tile.Tile, error) {
	ar, probing := a.lookup(name)
	if ar == nil {
		// Known, fresh and not an archive.
		t, err := objects(ctx)
		return nil, t, err
	}
	type result struct {
		t   *tile.Tile
		err error
	}
	var (
		objc  chan result
		ocost interface{ Load() tile.FetchCost }
	)
	cancel := context.CancelFunc(func() {})
	if probing {
		objc = make(chan result, 1)
		var octx context.Context
		octx, cancel = context.WithCancel(ctx)
		// The object read beside the probe is counted apart: it is what
		// the answer cost only when the answer is the object's.
		octx, ocost = tile.CountFetch(octx)
		go func() {
			t, err := objects(octx)
			objc <- result{t, err}
		}()
	}
	objectAnswer := func() result {
		r := <-objc
		c := ocost.Load()
		tile.AddS3(ctx, c.Requests, c.Bytes)
		return r
	}
	defer cancel()
	dropObject := func() {
		if objc != nil {
			cancel()
			<-objc
		}
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		dropObject()
		return nil, nil, ctx.Err()
	}
	switch {
	case ar.err != nil:
		if objc != nil {
			// The probe failed; an object tileset's tile is still a tile.
			if r := objectAnswer(); r.err == nil {
				return nil, r.t, nil
			}
		}
		return nil, nil, ar.err
	case ar.missing:
		if objc == nil {
			t, err := objects(ctx)
			return nil, t, err
		}
		r := objectAnswer()
		return nil, r.t, r.err
	}
	dropObject()
	return ar, nil, nil
}

// lookup returns name's state, starting a probe when none is fresh
// (probing reports that one was started for this call). A nil archive is a
// fresh "not an archive".
func (a *Origin) lookup(name string) (ar *archive, probing bool) {
	return a.lookupKind(name, false)
}

// imagePrefix keys the images in Origin.names apart from the tilesets: an
// image and a tileset may share a name and are probed for other formats.
const imagePrefix = "\x00image\x00"

// lookupKind is lookup of a tileset, or of an image when image is set.
func (a *Origin) lookupKind(name string, image bool) (ar *archive, probing bool) {
	key := name
	if image {
		key = imagePrefix + name
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return closedArchive(name), false
	}
	cur := a.names[key]
	if cur != nil {
		select {
		case <-cur.ready:
			switch {
			case cur.err == nil && !cur.missing:
				return cur, false // pinned to its ETag; a change shows as a 412
			case a.now().Sub(a.checkedAt(cur)) >= a.ttl:
			case cur.missing:
				return nil, false
			default:
				return cur, false // a malformed archive, until the TTL or a purge
			}
		default:
			return cur, false // a probe is running: wait for it
		}
	}
	if len(a.names) >= a.nextPrune {
		a.prune()
	}
	ar = &archive{name: name, image: image, mapKey: key, ready: make(chan struct{})}
	a.names[key] = ar
	go a.probe(ar)
	return ar, true
}

// prune drops settled names that are not archives (missing or malformed):
// all those past the TTL, then others until a quarter of maxNames is free.
// Archives and running probes stay. The next prune waits for another
// quarter of maxNames, so pruning costs O(1) per new name. a.mu is held.
func (a *Origin) prune() {
	now := a.now()
	settled := func(ar *archive) bool {
		select {
		case <-ar.ready:
			return ar.missing || ar.err != nil
		default:
			return false
		}
	}
	for n, ar := range a.names {
		if settled(ar) && now.Sub(a.checkedAt(ar)) >= a.ttl {
			delete(a.names, n)
		}
	}
	for n, ar := range a.names {
		if len(a.names) <= a.maxNames-a.maxNames/4 {
			break
		}
		if settled(ar) {
			delete(a.names, n)
		}
	}
	a.nextPrune = max(a.maxNames, len(a.names)+a.maxNames/4)
}

// probe finds what name is: the first format (in order of precedence)
// whose object NAME+ext exists is opened, detached from any one request
// (others wait on it) and bounded by the origin timeout; none: missing.
// The probe of each format reads the object's first bytes, which hold its
// header (for PMTiles, its root directory too).
func (a *Origin) probe(ar *archive) {
	defer close(ar.ready)
	ctx, cancel := context.WithTimeout(a.base, a.originTimeout)
	defer cancel()
	ar.checked.Store(a.now().UnixNano())
	a.probeAll(ctx, ar)
}

// probeAll probes ar's formats side by side (those of images for an
// image, of tilesets for a tileset): finding which object exists costs one
// round trip, whichever it is, and the format earliest in formats.Table
// wins. A tileset object that is no tileset (an image without
// georeferencing) leaves the name to the objects.
func (a *Origin) probeAll(ctx context.Context, ar *archive) {
	type first struct {
		rg  *origin.Range
		err error
	}
	var fs []format
	for _, f := range a.formats {
		if f.spec.Image && ar.image || f.spec.Tiles && !ar.image {
			fs = append(fs, f)
		}
	}
	// The probes of formats after the one found are cancelled and waited
	// for, so that none reaches S3 after the answer (on Lambda, from a
	// frozen environment).
	pctx, cancel := context.WithCancel(ctx)
	firsts := make([]chan first, len(fs))
	for i, f := range fs {
		firsts[i] = make(chan first, 1)
		go func() {
			rg, err := a.store.GetRange(pctx, a.store.ObjectKey(ar.name+f.spec.Ext), 0, f.spec.ProbeBytes, "")
			firsts[i] <- first{rg, err}
		}()
	}
	defer func() {
		cancel()
		for _, c := range firsts {
			<-c
		}
	}()
	for i, f := range fs {
		r := <-firsts[i]
		firsts[i] <- r // for the deferred drain
		switch {
		case errors.Is(r.err, tile.ErrNotFound):
			continue
		case r.err != nil:
			ar.err = fmt.Errorf("archive: %s %s: %w", f.spec.Name, ar.name, r.err)
			a.forgetFailed(ar)
		default:
			cancel()
			a.open(ctx, ar, f, r.rg)
		}
		return
	}
	ar.missing = true
}

// open opens ar's object of format f, whose first bytes the probe read.
func (a *Origin) open(ctx context.Context, ar *archive, f format, first *origin.Range) {
	key := ar.name + f.spec.Ext
	objectKey := a.store.ObjectKey(key)
	var err error
	ar.spec, ar.etag, ar.lastModified = f.spec, first.ETag, first.LastModified
	obj := formats.Object{Name: ar.name, ETag: first.ETag, Size: first.Size, LastModified: first.LastModified, First: first.Body}
	opts := formats.Options{MaxTileBytes: a.store.MaxObjectBytes(), Cache: versionCache{a.dirs, ar.mapKey + "\x00" + first.ETag + "\x00"}}
	if ar.image {
		opts.View = formats.ViewImage
	}
	began := time.Now()
	if f.spec.Staging == formats.Whole {
		// Staged as one download that every request of the name waits for,
		// detached from them: a large object takes longer than a tile.
		sctx, cancel := context.WithTimeout(a.base, wholeStageTimeout)
		defer cancel()
		obj.Path, err = a.stager.Stage(sctx, key, first.ETag, first.Size)
		ctx = sctx
	} else {
		obj.Range = a.rangeReader(ar.name, objectKey, first.ETag)
	}
	if err == nil {
		ar.ds, err = f.open(ctx, obj, opts)
	}
	switch {
	case err == nil:
		if f.spec.Staging == formats.Whole {
			a.log.Info("archive staged", "format", f.spec.Name, "name", ar.name, "key", key, "etag", first.ETag, "size", first.Size, "path", obj.Path, "elapsed", time.Since(began))
		}
	case errors.Is(err, formats.ErrNotTileset):
		ar.missing = true
	case errors.Is(err, formats.ErrInvalid), errors.Is(err, stage.ErrNoRoom):
		a.log.Error("archive refused", "format", f.spec.Name, "name", ar.name, "key", objectKey, "etag", first.ETag, "size", first.Size, "err", err)
		ar.err = &tile.RefusedError{Format: f.spec.Title, Name: ar.name, Err: err}
	default:
		ar.err = fmt.Errorf("archive: %s %s: %w", f.spec.Name, ar.name, err)
		a.forgetFailed(ar)
	}
}

// wholeStageTimeout bounds one staging of an object read whole, detached
// from the requests that wait for it.
const wholeStageTimeout = 5 * time.Minute

// Refusal opens name's archive as a request would, sharing its probe, and
// returns why the probe refused it: nil when it serves, is not an archive,
// or could not be asked in time.
func (a *Origin) Refusal(ctx context.Context, name string) error {
	ar, _ := a.lookup(name)
	if ar == nil {
		return nil
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		return nil
	}
	var r *tile.RefusedError
	if errors.As(ar.err, &r) {
		return r.Err
	}
	return nil
}

// IsRefused reports whether err is the answer of an archive or database its
// probe refused (malformed, or too large to stage): logged once, already.
func IsRefused(err error) bool {
	var r *tile.RefusedError
	return errors.As(err, &r)
}

func (a *Origin) checkedAt(ar *archive) time.Time { return time.Unix(0, ar.checked.Load()) }

// forgetFailed drops a probe that failed for a passing reason (S3 errors),
// so the next request probes again.
func (a *Origin) forgetFailed(ar *archive) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.names[ar.mapKey] == ar {
		delete(a.names, ar.mapKey)
	}
}

// rangeReader reads the archive version etag: from its staged copy when
// there is one of that version, else by ranged GETs pinned with If-Match.
func (a *Origin) rangeReader(name, objectKey, etag string) formats.RangeReader {
	return formats.RangeReaderFunc(func(ctx context.Context, off, n int64) ([]byte, error) {
		a.mu.Lock()
		lc, ok := a.local[name]
		a.mu.Unlock()
		if ok && lc.etag == etag {
			return lc.src.ReadRange(ctx, off, n)
		}
		rg, err := a.store.GetRange(ctx, objectKey, off, n, etag)
		if err != nil {
			return nil, err
		}
		return rg.Body, nil
	})
}

// changed drops a tileset whose archive no longer has the ETag it was read
// at (a 412): its tiles and TileJSON on this instance, through the purge,
// which also forgets the archive (forget) and keeps in-flight fills of the
// old version out of the tiers.
func (a *Origin) changed(ar *archive) {
	a.log.Info("archive changed under a read; dropping what it serves on this instance", "name", ar.name, "etag", ar.etag)
	for _, p := range tilename.Derived(ar.objectKey()) {
		a.purge(p)
	}
}

// covers reports whether a purge of prefix covers ar: a tileset's
// directory NAME/ or the object of any of its formats (NAME.pmtiles,
// NAME.mbtiles); an image's IIIF directories or its object (ID.tif).
func covers(prefix string, ar *archive) bool {
	exts, dirs := formats.Exts(), []string{ar.name + "/"}
	if ar.image {
		exts, dirs = formats.ImageExts(), tilename.IIIFDirs(ar.name)
	}
	for _, d := range dirs {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	for _, ext := range exts {
		if strings.HasPrefix(ar.name+ext, prefix) {
			return true
		}
	}
	return false
}

// Forget drops what is known of the archives a purge of prefix covers: a
// purge of NAME/ or of NAME.pmtiles (or anything above them) means the
// archive may be another now.
func (a *Origin) Forget(prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, ar := range a.names {
		if covers(prefix, ar) {
			if !a.closed { // else Close closes it
				a.closing.Go(func() { closeDataset(ar) })
			}
			delete(a.names, key)
			a.dirs.DeletePrefix(key + "\x00")
		}
	}
	a.dirs.DeletePrefix(refusedPrefix + prefix)
}

// current returns the archive name resolves to, verified with S3 within the
// TTL: an older one is checked again (its first bytes, pinned to its ETag).
// It is how revalidation asks "is the archive's ETag still the same".
func (a *Origin) current(ctx context.Context, ar *archive) (*archive, error) {
	if now, checked := a.now(), a.checkedAt(ar); now.Sub(checked) < a.ttl && (a.trusted == nil || a.trusted(checked, now)) {
		return ar, nil
	}
	_, err := a.store.GetRange(ctx, a.store.ObjectKey(ar.objectKey()), 0, 1, ar.etag)
	switch {
	case err == nil:
		ar.checked.Store(a.now().UnixNano())
		return ar, nil
	case errors.Is(err, tile.ErrPreconditionFailed), errors.Is(err, tile.ErrNotFound):
		return nil, tile.ErrPreconditionFailed
	}
	return nil, err
}

// notModified is tile.ErrNotModified when ifNoneMatch is a tile ETag that
// names ar's current version (a revalidation answered without reading), nil
// when the tile must be read, or the error of finding the current version.
func (a *Origin) notModified(ctx context.Context, ar *archive, ifNoneMatch string) error {
	if ifNoneMatch == "" {
		return nil
	}
	cur, err := a.current(ctx, ar)
	if err != nil {
		return err
	}
	if archiveOfTag(ifNoneMatch) == cur.etag {
		return tile.ErrNotModified
	}
	return nil
}

// readTile reads tile z/x/y of ar; a revalidation whose tile ETag names the
// archive's current version is ErrNotModified, answered without reading.
func (a *Origin) readTile(ctx context.Context, ar *archive, tr formats.TileRequest, ifNoneMatch string) (*tile.Tile, error) {
	if !ar.ds.Accepts(tr) {
		return nil, tile.ErrNotFound
	}
	if err := a.notModified(ctx, ar, ifNoneMatch); err != nil {
		return nil, err
	}
	t, err := ar.ds.Tile(ctx, tr)
	switch {
	case errors.Is(err, tile.ErrNotFound), errors.Is(err, tile.ErrPreconditionFailed):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("archive: %s %s: %w", ar.spec.Name, ar.name, err)
	}
	return &tile.Tile{
		Body:            t.Body,
		ContentType:     t.ContentType,
		ContentEncoding: t.ContentEncoding,
		ETag:            tile.DerivedTag(ar.etag, "/"+t.Version),
		LastModified:    ar.lastModified,
	}, nil
}

// tileJSON answers NAME.json: from the archive's header and metadata, or
// from NAME/metadata.json, or else the object NAME.json as it is. The
// document holds a placeholder base URL; document renders it for the base
// of each answer.
func (a *Origin) tileJSON(ctx context.Context, name, key, ifNoneMatch string) (*tile.Tile, error) {
	for attempt := 0; ; attempt++ {
		ar, obj, err := a.resolve(ctx, name, func(ctx context.Context) (*tile.Tile, error) {
			return a.metadataJSON(ctx, name, key, ifNoneMatch)
		})
		if err != nil || ar == nil {
			return obj, err
		}
		t, err := a.archiveTileJSON(ctx, ar, ifNoneMatch)
		if attempt == 0 && errors.Is(err, tile.ErrPreconditionFailed) {
			a.changed(ar)
			continue
		}
		return t, err
	}
}

func (a *Origin) archiveTileJSON(ctx context.Context, ar *archive, ifNoneMatch string) (*tile.Tile, error) {
	etag := tile.DerivedTag(ar.etag, tileset.Tag)
	if ifNoneMatch != "" {
		cur, err := a.current(ctx, ar)
		if err != nil {
			return nil, err
		}
		if ifNoneMatch == tile.DerivedTag(cur.etag, tileset.Tag) {
			return nil, tile.ErrNotModified
		}
	}
	tj, err := ar.ds.TileJSON(ctx, tileset.PlaceholderBase, ar.name)
	if err != nil {
		return nil, fmt.Errorf("archive: %s %s: %w", ar.spec.Name, ar.name, err)
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: etag, LastModified: ar.lastModified}, nil
}

// metadataJSON is the TileJSON of an object tileset, from NAME/metadata.json,
// or the object NAME.json itself when there is no metadata.json.
func (a *Origin) metadataJSON(ctx context.Context, name, key, ifNoneMatch string) (*tile.Tile, error) {
	inm := ""
	if inner, ok := strings.CutSuffix(ifNoneMatch, tileset.Tag+`"`); ok {
		inm = inner + `"`
	}
	md, err := a.next.Get(ctx, tilename.MetadataKey(name), inm)
	switch {
	case errors.Is(err, tile.ErrNotFound):
		objINM := ifNoneMatch
		if strings.HasSuffix(ifNoneMatch, tileset.Tag+`"`) {
			objINM = "" // the cached copy was a TileJSON: read the object afresh
		}
		t, err := a.next.Get(ctx, key, objINM)
		if errors.Is(err, tile.ErrNotFound) {
			return a.listedTileJSON(ctx, name, ifNoneMatch) // what the keys show
		}
		return t, err
	case err != nil:
		return nil, err
	}
	body, err := a.decode(md.ContentEncoding, md.Body)
	if err != nil {
		return nil, fmt.Errorf("archive: %s/metadata.json: %w", name, err)
	}
	tj, err := tileset.FromMetadata(tileset.PlaceholderBase, name, body)
	if err != nil {
		return nil, err
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: tile.DerivedTag(md.ETag, tileset.Tag), LastModified: md.LastModified}, nil
}

// archiveOfTag is the archive ETag a tile ETag was derived from (readTile
// derives one from the archive's ETag and the tile's version in it), or "".
func archiveOfTag(tag string) string {
	inner := strings.Trim(tag, `"`)
	i := strings.LastIndexByte(inner, '/')
	if i < 0 {
		return ""
	}
	return `"` + inner[:i] + `"`
}

// parseTileRequest parses "z/x/y.ext", or "variant/z/x/y.ext" with a
// variant of lower-case letters and hyphens.
func parseTileRequest(rest string) (formats.TileRequest, bool) {
	var tr formats.TileRequest
	if strings.Count(rest, "/") == 3 {
		v, r, _ := strings.Cut(rest, "/")
		if v == "" || len(v) > 32 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz-") != "" {
			return tr, false
		}
		tr.Variant, rest = v, r
	}
	var ok bool
	tr.Z, tr.X, tr.Y, tr.Ext, ok = parseZXY(rest)
	return tr, ok
}

// parseZXY parses "z/x/y.ext" (decimal, no signs or leading zeros beyond
// "0"), within the grid of zoom z.
func parseZXY(rest string) (z uint8, x, y uint32, ext string, ok bool) {
	zs, rest, ok1 := strings.Cut(rest, "/")
	xs, rest, ok2 := strings.Cut(rest, "/")
	ys, ext, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 || ext == "" || strings.ContainsAny(ext, "/.") {
		return 0, 0, 0, "", false
	}
	num := func(s string, max uint64) (uint64, bool) {
		if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
			return 0, false
		}
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil && n <= max
	}
	zn, okz := num(zs, maxZoom)
	if !okz {
		return 0, 0, 0, "", false
	}
	lim := uint64(1)<<zn - 1
	xn, okx := num(xs, lim)
	yn, oky := num(ys, lim)
	if !okx || !oky {
		return 0, 0, 0, "", false
	}
	return uint8(zn), uint32(xn), uint32(yn), ext, true
}

// versionCache keeps what a format decodes of one archive version (PMTiles
// leaf directories) in the byte-bounded SIEVE of the directory cache, under
// prefix (the archive's name and ETag): Forget drops it with the name.
type versionCache struct {
	c      *memory.Cache
	prefix string
}

func (v versionCache) Get(key string) (any, bool) {
	t, ok := v.c.Get(v.prefix + key)
	if !ok {
		return nil, false
	}
	d, ok := t.Prepared.(decoded)
	return d.v, ok
}

func (v versionCache) Put(key string, val any, cost int64) {
	v.c.Set(v.prefix+key, &tile.Tile{Prepared: decoded{val, cost}})
}

// decoded is a format's decoded value held in the directory cache.
type decoded struct {
	v    any
	cost int64
}

// Cost implements tile.Prepared.
func (d decoded) Cost() int64 { return d.cost }

// UseLocal serves tileset name's archive, while S3 holds version etag of
// it, from src (a copy staged to local disk) instead of ranged GETs. Once
// the archive changes in S3, its tiles are read from S3 again.
func (a *Origin) UseLocal(name, etag string, src formats.RangeReader) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.local[name] = localCopy{etag: etag, src: src}
}

// Close cancels the probes and stagings under way and closes every
// database the origin opened, once the reads under way end. Call it after
// the last request; a request after it is answered ErrClosed for any name
// that may be an archive. It is safe to call more than once.
func (a *Origin) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.stop()
	open := make([]*archive, 0, len(a.names))
	for _, ar := range a.names {
		open = append(open, ar)
	}
	a.mu.Unlock()
	for _, ar := range open {
		closeDataset(ar)
	}
	a.closing.Wait()
	return nil
}

// closedArchive is what every name resolves to after Close.
func closedArchive(name string) *archive {
	ar := &archive{name: name, ready: make(chan struct{}), err: ErrClosed}
	close(ar.ready)
	return ar
}
