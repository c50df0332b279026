// Package archive serves tilesets stored as one file, as an origin of the
// tier engine: a PMTiles v3 archive (NAME.pmtiles, read by range and pinned
// to its ETag) or an MBTiles database (NAME.mbtiles, staged whole to local
// disk), each as the tileset NAME/ with its TileJSON at NAME.json; every
// other key goes on to the object origin. A tileset's tiles land in the
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

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/origin"
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

// Ext names an archive: TILES_PREFIX + NAME + Ext serves the tileset NAME/.
const Ext = tilename.ArchiveExt

// Defaults of the archive origin.
const (
	// DefaultTTL is how long "NAME.pmtiles does not exist" is believed, and
	// how long an archive's ETag counts as checked for the revalidation of
	// its tiles.
	DefaultTTL = time.Minute
	// DefaultDirectoryBytes bounds the leaf directory cache when Deps
	// gives none.
	DefaultDirectoryBytes = 16 << 20
	// TileJSONTag ends the ETag of a TileJSON built from an archive, a
	// database or a metadata.json: the document is stored with
	// PlaceholderBase, and rendered for the base URL of each answer.
	TileJSONTag = "/tilejson"
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
	// Stager stages NAME.mbtiles whole to local disk; nil: MBTiles are off.
	Stager Stager
	// Directories keeps decoded leaf directories; nil: a cache of
	// DefaultDirectoryBytes.
	Directories *memory.Cache
	// Decode decodes a body stored with a content coding (a gzip
	// metadata.json), returning it as it is for a coding it does not
	// decode; nil: bodies are read as stored.
	Decode func(enc string, b []byte) ([]byte, error)
	// Purge drops a prefix from the tiers of this instance: a tileset
	// whose archive changed under a read. The purge must reach Forget, as
	// the tiers' purge hook does, so the new version is opened; nil:
	// nothing is dropped.
	Purge func(prefix string)
	// Trusted reports whether what S3 said at storedAt may still be relied
	// on at now: the tier engine's journal follower vouches for it
	// (tiers.Engine.Trusted). A version checked when the follower no
	// longer vouches for is checked again before a revalidation is
	// answered from it, whatever the TTL; nil: the TTL alone decides.
	Trusted func(storedAt, now time.Time) bool
	Logger  *slog.Logger
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
	stager    Stager               // stages NAME.mbtiles; nil: MBTiles are off

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
	src  pmtiles.RangeReader
}

// archive is what one tileset name resolved to at checked: an archive
// version (r, etag), or none (missing). ready is closed once the probe that
// made it ends; err is that probe's failure.
type archive struct {
	name         string
	ready        chan struct{}
	checked      atomic.Int64 // UnixNano of the last time S3 confirmed what this is
	missing      bool
	err          error
	r            *pmtiles.Reader
	etag         string
	lastModified time.Time
	mb           *mbSource // set when the name is an MBTiles database (r is nil)
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
		now: cfg.Now, decode: d.Decode, purgeTiers: d.Purge, trusted: d.Trusted, log: d.Logger,
		names: map[string]*archive{}, local: map[string]localCopy{},
		maxNames: defaults.Positive(cfg.MaxNames, maxNames),
	}
	a.nextPrune = a.maxNames
	a.base, a.stop = context.WithCancel(context.Background())
	if a.ttl < 0 {
		a.ttl = DefaultTTL
	}
	a.now, a.log = defaults.Clock(a.now), defaults.Logger(a.log)
	if a.decode == nil {
		a.decode = func(_ string, b []byte) ([]byte, error) { return b, nil }
	}
	if a.purgeTiers == nil {
		a.purgeTiers = func(string) {}
	}
	return a, nil
}

// purge drops prefix from this instance's tiers.
func (a *Origin) purge(prefix string) { a.purgeTiers(prefix) }

// TTL is how long a name's probe is believed (Config.TTL).
func (a *Origin) TTL() time.Duration { return a.ttl }

// Store is the S3 access the origin reads archives through.
func (a *Origin) Store() Store { return a.store }

// MBTiles reports whether databases (NAME.mbtiles) are served.
func (a *Origin) MBTiles() bool { return a.stager != nil }

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
	z, x, y, ext, ok := parseZXY(rest)
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
		t, err := a.readTile(ctx, ar, z, x, y, ext, ifNoneMatch)
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
	var objc chan result
	cancel := context.CancelFunc(func() {})
	if probing {
		objc = make(chan result, 1)
		var octx context.Context
		octx, cancel = context.WithCancel(ctx)
		go func() {
			t, err := objects(octx)
			objc <- result{t, err}
		}()
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
			if r := <-objc; r.err == nil {
				return nil, r.t, nil
			}
		}
		return nil, nil, ar.err
	case ar.missing:
		if objc == nil {
			t, err := objects(ctx)
			return nil, t, err
		}
		r := <-objc
		return nil, r.t, r.err
	}
	dropObject()
	return ar, nil, nil
}

// lookup returns name's state, starting a probe when none is fresh
// (probing reports that one was started for this call). A nil archive is a
// fresh "not an archive".
func (a *Origin) lookup(name string) (ar *archive, probing bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return closedArchive(name), false
	}
	cur := a.names[name]
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
	ar = &archive{name: name, ready: make(chan struct{})}
	a.names[name] = ar
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

// probe opens name's archive: detached from any one request (others wait
// on it), bounded by the origin timeout.
func (a *Origin) probe(ar *archive) {
	defer close(ar.ready)
	ctx, cancel := context.WithTimeout(a.base, a.originTimeout)
	defer cancel()
	ar.checked.Store(a.now().UnixNano())
	objectKey := a.store.ObjectKey(ar.name + Ext)
	first, err := a.store.GetRange(ctx, objectKey, 0, pmtiles.RootWindow, "")
	switch {
	case errors.Is(err, tile.ErrNotFound):
		a.probeMBTiles(ctx, ar)
		return
	case err != nil:
		ar.err = fmt.Errorf("archive: archive %s: %w", ar.name, err)
		a.forgetFailed(ar)
		return
	case first.Size < pmtiles.HeaderLen:
		err = fmt.Errorf("pmtiles: archive of %d bytes is shorter than its header: %w", first.Size, pmtiles.ErrInvalid)
	default:
		ar.etag, ar.lastModified = first.ETag, first.LastModified
		src := a.rangeReader(ar.name, objectKey, first.ETag)
		// NewReader validates the archive: header, sections inside its
		// size, root directory and the root's entries inside their sections.
		ar.r, err = pmtiles.NewReader(first.Body, first.Size, src, pmtiles.Options{Leaves: leafCache{a.dirs, ar.name + "\x00" + first.ETag + "\x00"}})
	}
	if err != nil {
		// A malformed archive is reported here, once per probe, and
		// answers 502 for the TTL (or until a purge of it), without a read
		// or a log line per request.
		a.log.Error("archive refused", "name", ar.name, "key", objectKey, "etag", first.ETag, "size", first.Size, "err", err)
		ar.err = &refusedError{name: ar.name, err: err}
	}
}

// refusedError is the answer of an archive its probe refused: the probe
// logged why, so a request does not.
type refusedError struct {
	name string
	err  error
}

func (e *refusedError) Error() string {
	return "archive: archive " + e.name + " refused: " + e.err.Error()
}
func (e *refusedError) Unwrap() error { return e.err }

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
	var r *refusedError
	if errors.As(ar.err, &r) {
		return r.err
	}
	return nil
}

// IsRefused reports whether err is the answer of an archive or database its
// probe refused (malformed, or too large to stage): logged once, already.
func IsRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}

func (a *Origin) checkedAt(ar *archive) time.Time { return time.Unix(0, ar.checked.Load()) }

// forgetFailed drops a probe that failed for a passing reason (S3 errors),
// so the next request probes again.
func (a *Origin) forgetFailed(ar *archive) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.names[ar.name] == ar {
		delete(a.names, ar.name)
	}
}

// rangeReader reads the archive version etag: from its staged copy when
// there is one of that version, else by ranged GETs pinned with If-Match.
func (a *Origin) rangeReader(name, objectKey, etag string) pmtiles.RangeReader {
	a.mu.Lock()
	lc, ok := a.local[name]
	a.mu.Unlock()
	if ok && lc.etag == etag {
		return lc.src
	}
	return pmtiles.RangeReaderFunc(func(ctx context.Context, off, n int64) ([]byte, error) {
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
	a.log.Info("archive changed under a read; dropping its tileset on this instance", "name", ar.name, "etag", ar.etag)
	a.purge(ar.name + "/")
	a.purge(tilename.TileJSONKey(ar.name))
}

// Forget drops what is known of the archives a purge of prefix covers: a
// purge of NAME/ or of NAME.pmtiles (or anything above them) means the
// archive may be another now.
func (a *Origin) Forget(prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, ar := range a.names {
		if strings.HasPrefix(name+"/", prefix) || strings.HasPrefix(name+Ext, prefix) || strings.HasPrefix(name+MBTilesExt, prefix) {
			if !a.closed { // else Close closes it
				a.closing.Go(func() { closeMB(ar) })
			}
			delete(a.names, name)
			a.dirs.DeletePrefix(name + "\x00")
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
func (a *Origin) readTile(ctx context.Context, ar *archive, z uint8, x, y uint32, ext, ifNoneMatch string) (*tile.Tile, error) {
	if ar.mb != nil {
		return a.readMBTile(ctx, ar, z, x, y, ext, ifNoneMatch)
	}
	h := ar.r.Header()
	if !extMatches(h.TileType, ext) {
		return nil, tile.ErrNotFound
	}
	if err := a.notModified(ctx, ar, ifNoneMatch); err != nil {
		return nil, err
	}
	rg, ok, err := ar.r.Find(ctx, z, x, y)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, tile.ErrNotFound
	}
	if max := a.store.MaxObjectBytes(); max > 0 && rg.Length > max {
		// Refused from the directory entry, before a byte is read or
		// allocated (Get remembers the refusal).
		return nil, fmt.Errorf("archive: archive %s: tile %d/%d/%d is %d bytes, MAX_TILE_BYTES is %d: %w", ar.name, z, x, y, rg.Length, max, tile.ErrTooLarge)
	}
	if rg.Length > pmtiles.DefaultMaxTileBytes {
		return nil, fmt.Errorf("archive: archive %s: tile %d/%d/%d of %d bytes: %w", ar.name, z, x, y, rg.Length, pmtiles.ErrInvalid)
	}
	etag := tileTag(ar.etag, rg)
	if rg.Length == 0 {
		return &tile.Tile{ContentType: h.TileType.ContentType(), ETag: etag, LastModified: ar.lastModified}, nil
	}
	body, err := a.rangeReader(ar.name, a.store.ObjectKey(ar.name+Ext), ar.etag).ReadRange(ctx, rg.Offset, rg.Length)
	if err != nil {
		return nil, err
	}
	if int64(len(body)) != rg.Length {
		return nil, fmt.Errorf("archive: archive %s: tile read %d of %d bytes: %w", ar.name, len(body), rg.Length, pmtiles.ErrInvalid)
	}
	return &tile.Tile{
		Body:            body,
		ContentType:     h.TileType.ContentType(),
		ContentEncoding: h.TileCompression.ContentEncoding(),
		ETag:            etag,
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
	etag := DerivedTag(ar.etag, TileJSONTag)
	if ifNoneMatch != "" {
		cur, err := a.current(ctx, ar)
		if err != nil {
			return nil, err
		}
		if ifNoneMatch == DerivedTag(cur.etag, TileJSONTag) {
			return nil, tile.ErrNotModified
		}
	}
	if ar.mb != nil {
		return a.mbTileJSON(ctx, ar)
	}
	md, err := ar.r.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	tj, err := tileset.FromArchive(PlaceholderBase, ar.name, ar.r.Header(), md)
	if err != nil {
		return nil, err
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: etag, LastModified: ar.lastModified}, nil
}

// metadataJSON is the TileJSON of an object tileset, from NAME/metadata.json,
// or the object NAME.json itself when there is no metadata.json.
func (a *Origin) metadataJSON(ctx context.Context, name, key, ifNoneMatch string) (*tile.Tile, error) {
	inm := ""
	if inner, ok := strings.CutSuffix(ifNoneMatch, TileJSONTag+`"`); ok {
		inm = inner + `"`
	}
	md, err := a.next.Get(ctx, tilename.MetadataKey(name), inm)
	switch {
	case errors.Is(err, tile.ErrNotFound):
		objINM := ifNoneMatch
		if strings.HasSuffix(ifNoneMatch, TileJSONTag+`"`) {
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
	tj, err := tileset.FromMetadata(PlaceholderBase, name, body)
	if err != nil {
		return nil, err
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: DerivedTag(md.ETag, TileJSONTag), LastModified: md.LastModified}, nil
}

// PlaceholderBase is the base URL TileJSON documents are stored with;
// document replaces their tile URLs with ones under the answer's base.
const PlaceholderBase = "http://tilesieve.invalid"

// tileTag is the ETag of the tile at rg of archive version etag: the tile
// is the same exactly while the archive is.
func tileTag(etag string, rg pmtiles.Range) string {
	return DerivedTag(etag, "/"+strconv.FormatInt(rg.Offset, 10)+"+"+strconv.FormatInt(rg.Length, 10))
}

// DerivedTag is `"inner<suffix>"` for etag `"inner"` (quotes optional).
func DerivedTag(etag, suffix string) string {
	return `"` + strings.Trim(etag, `"`) + suffix + `"`
}

// archiveOfTag is the archive ETag a tile ETag was derived from (tileTag),
// or "".
func archiveOfTag(tag string) string {
	inner := strings.Trim(tag, `"`)
	i := strings.LastIndexByte(inner, '/')
	if i < 0 {
		return ""
	}
	return `"` + inner[:i] + `"`
}

// extMatches reports whether ext is one the archive's tile type answers to.
func extMatches(tt pmtiles.TileType, ext string) bool {
	for _, e := range tt.Exts() {
		if strings.EqualFold(e, ext) {
			return true
		}
	}
	return false
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
	zn, okz := num(zs, pmtiles.MaxZoom)
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

// leafCache keeps an archive version's decoded leaf directories in the
// byte-bounded SIEVE of the server's directory cache, under prefix (the
// archive's name and ETag) and the leaf's offset.
type leafCache struct {
	c      *memory.Cache
	prefix string
}

func (l leafCache) key(r pmtiles.Range) string {
	return l.prefix + strconv.FormatInt(r.Offset, 10) + "+" + strconv.FormatInt(r.Length, 10)
}

func (l leafCache) Get(r pmtiles.Range) ([]pmtiles.Entry, bool) {
	t, ok := l.c.Get(l.key(r))
	if !ok {
		return nil, false
	}
	d, ok := t.Prepared.(leafEntries)
	return d, ok
}

func (l leafCache) Put(r pmtiles.Range, entries []pmtiles.Entry) {
	l.c.Set(l.key(r), &tile.Tile{Prepared: leafEntries(entries)})
}

// leafEntries is a decoded directory held in the directory cache.
type leafEntries []pmtiles.Entry

// Cost implements tile.Prepared.
func (d leafEntries) Cost() int64 { return tile.AllocBytes(cap(d)*pmtiles.EntryBytes) + 24 }

// UseLocal serves tileset name's archive, while S3 holds version etag of
// it, from src (a copy staged to local disk) instead of ranged GETs. Once
// the archive changes in S3, its tiles are read from S3 again.
func (a *Origin) UseLocal(name, etag string, src pmtiles.RangeReader) {
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
		closeMB(ar)
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
