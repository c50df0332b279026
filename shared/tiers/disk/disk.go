// Package disk is the /tmp tier: tiles kept as files in a local directory,
// bounded in bytes with SIEVE eviction, surviving warm invocations and a
// process restart inside a live Lambda execution environment.
//
// What it promises:
//
//   - A torn file is never served, nor one found corrupt. Every file
//     carries CRC32C checksums of its header and body and its own tile
//     key; Get verifies them, Store.Open verifies the header and then the
//     body as it streams, and a file that fails is removed, logged at warn
//     and reported as a miss (or, once Store.Open has returned, as a read
//     error). Body.SendTo sends a body straight from its file, unread
//     (sendfile), when the store knows it whole: it wrote the file (the
//     rename that published it made it whole, and nothing but the store
//     writes there), or it has read the file whole and verified it since
//     it indexed it, so a file found at Open is verified on its first read
//     before it is ever sent so. What SendTo cannot see is a file damaged
//     in place after that: the trust a web server places in the files it
//     sends.
//   - Writes are atomic: a temp file in the same directory, fsync when
//     configured, then rename. A write that fails removes its temp file and
//     returns an error; callers degrade to memory + origin.
//   - The files stay within MaxBytes as the file system counts them: each
//     is charged its length rounded up to the file system's block (read at
//     Open, at least 4 KiB). A Put makes room before it writes; if the file
//     system fills before the bound does (other files share it), the Put
//     that hit ENOSPC evicts, lowers the bound it works under to what fits
//     and retries once, so a full file system keeps taking new tiles.
//   - Open rebuilds the index from the files found in Dir (reading headers
//     only), removes leftover temp files and files with bad headers, and
//     evicts down to MaxBytes.
//   - Delete, DeletePrefix and Detach win over a Put that was writing when
//     they ran: that Put is not committed (ErrPurged), so a purged tile does
//     not come back from a fill that started before the purge reached the
//     disk. PutSince extends this back to a Mark the caller took earlier
//     (under its own lock), so a caller can write outside that lock.
//   - No removal waits for a file being written or its fsyncs: the store's
//     lock is held for index updates, the rename and unlinks only.
//   - Detach takes a prefix out of the index at once and leaves the files to
//     Detached.Unlink, which a caller runs outside its own locks. Until then
//     the files are never served and this store never indexes them again; a
//     store opened later over the same directory does find and index those
//     still there.
//
// Eviction is SIEVE, with the queue and hand the memory tier uses too
// (shared/tiers/internal/sieve). Get and Store.Open mark an entry visited
// under the store's lock; Open queues the files it finds oldest first by
// StoredAt, none visited. Every new file enters at the head. The memory tier's
// probation (a heavy newcomer enters at the hand) is not used here: staging
// writes tiles before anyone asks for them, and probation would make each
// one heavier than the mean the next victim.
//
// File names are derived from a hash of the key (see fileName), never from
// the key itself, so any key the key rules allow is safe.
package disk

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/tiers/disk/internal/rawfile"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/chunk"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/radix"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/sieve"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Defaults of Config.
const (
	DefaultDir = "/tmp/tilesieve"
	// MaxDefaultBytes caps the default bound: Lambda's ephemeral storage is
	// at most 10 GiB.
	MaxDefaultBytes = 10 << 30
	// defaultShare of the free space found at Open becomes the default bound.
	defaultShare = 0.8
	// scanChunk is how many index entries Scan copies per lock hold.
	scanChunk = 256
	// unlinkBatch is how many files Unlink claims per lock hold.
	unlinkBatch = 64
)

// The block files are charged in is the file system's, within these: below
// 4 KiB no common file system allocates less (and the page cache holds whole
// pages); a file system reporting more than 1 MiB reports an I/O size, not
// an allocation unit.
const (
	minBlock = 4 << 10
	maxBlock = 1 << 20
)

// IndexEntryBytes is the heap one index entry costs besides its key and ETag
// bytes: the entry, its radix node and its share of inner nodes and child
// arrays (see TestIndexBytes).
const IndexEntryBytes = 136

// Errors.
var (
	// ErrTooLarge is a tile whose file would not fit in MaxBytes at all.
	ErrTooLarge = errors.New("disk: tile larger than the disk bound")
	// ErrPurged is a Put overtaken by a Delete, DeletePrefix or Detach while
	// it was writing; nothing was stored.
	ErrPurged = errors.New("disk: purged while being written")
)

// Config configures a Store.
type Config struct {
	Dir string // DISK_CACHE_DIR, default "/tmp/tilesieve"
	// MaxBytes bounds the space of the files (DISK_CACHE_BYTES), each
	// charged in whole blocks; 0 means 80% of the space free at Open plus
	// what the store already holds, at most 10 GiB.
	MaxBytes int64
	// Fsync syncs each file (and its directory after the rename) before Put
	// returns. Off by default: Lambda's /tmp does not outlive its execution
	// environment, and the rename alone is what makes a file appear whole.
	Fsync bool             // DISK_FSYNC
	Now   func() time.Time // stamps Tile.StoredAt when a Put leaves it zero; default time.Now
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, defaults.NotNegative("disk", "MaxBytes", c.MaxBytes))
	if strings.ContainsRune(c.Dir, 0) {
		errs = append(errs, fmt.Errorf("disk: Dir %q contains a NUL byte", c.Dir))
	}
	return errors.Join(errs...)
}

// Item is one entry reported by Scan and Stat.
type Item struct {
	Key  string `json:"key"`
	Size int64  `json:"size"` // body bytes
	ETag string `json:"etag"`
	// ReadsAgo is, from Stat, how many reads of the store (Get, Open) ago
	// the entry was last read; -1 if it was not read since it was
	// indexed. A caller deciding whether to keep a tile closer (the memory
	// tier) asks how soon it came back.
	ReadsAgo int64 `json:"-"`
}

// Stats are the store's counters.
type Stats struct {
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
	Writes      uint64 `json:"writes"`
	WriteErrors uint64 `json:"write_errors"`
	// NoSpace counts writes that hit ENOSPC; each evicted and retried once.
	NoSpace   uint64 `json:"no_space"`
	Corrupt   uint64 `json:"corrupt"`
	Evictions uint64 `json:"evictions"`
	Entries   int64  `json:"entries"`
	Bytes     int64  `json:"bytes"` // charged in blocks
	MaxBytes  int64  `json:"max_bytes"`
	// LimitBytes is the bound Puts make room under: MaxBytes, or less while
	// the file system has less room than that for the store.
	LimitBytes int64 `json:"limit_bytes"`
	BlockSize  int64 `json:"block_size"`
	// IndexBytes estimates the heap the index holds (IndexEntryBytes per
	// entry plus its key and ETag).
	IndexBytes int64 `json:"index_bytes"`
}

// Entry states, guarded by Store.mu.
const (
	indexed   uint8 = iota
	detached        // out of the index, file not yet unlinked
	unlinking       // an Unlink is removing the file now
)

// entry is the index's record of one file. key, the sizes and etag never
// change once the entry is made; visited, state and links are guarded by
// Store.mu. The file's name is fileName(key), derived rather than kept: it
// would cost more heap than the rest of the entry.
type entry struct {
	key      string
	cost     int64 // what the file is charged against MaxBytes
	bodySize int64
	etag     string
	visited  bool // SIEVE: read since the hand last passed
	state    uint8
	// verified is set once the body is known whole: the store wrote the
	// file, or has read it whole and checked its checksum.
	verified atomic.Bool
	off      int32              // where the body begins in the file: the header and metadata's length
	lastRead uint32             // Store.reads at the entry's last read; 0: none since indexed
	links    sieve.Links[entry] // the entry's place in Store.sieve
}

// Links and TakeVisited make an entry a sieve.Entry.
func (e *entry) Links() *sieve.Links[entry] { return &e.links }

func (e *entry) TakeVisited() bool {
	v := e.visited
	e.visited = false
	return v
}

// indexBytes is the heap e costs the index.
func (e *entry) indexBytes() int64 {
	return IndexEntryBytes + tile.AllocBytes(len(e.key)) + tile.AllocBytes(len(e.etag))
}

// Store is the disk tier. It is safe for concurrent use.
type Store struct {
	cfg      Config
	log      *slog.Logger
	maxBytes int64
	block    int64 // the allocation unit files are charged in

	// mu guards index, sieve, every entry's mutable fields, reserved,
	// limit's writes and detached.
	mu       sync.Mutex
	index    radix.Tree[*entry]
	sieve    sieve.Queue[entry, *entry] // eviction order of the indexed entries
	reserved int64                      // room taken by Puts writing their temp files
	// detached holds, by key, the entries Detach took out of the index whose
	// files are not unlinked yet. A Put of such a key takes its entry out
	// (its rename replaces the file), so an Unlink never removes a newer file.
	detached map[string]*entry
	unlinked sync.Cond // on mu; broadcast when an Unlink batch is done

	reads      uint32        // Gets and Opens that found their key (wrapping); guarded by mu
	limit      atomic.Int64  // the bound Puts make room under; written under mu
	purges     atomic.Uint64 // bumped under mu by Delete and Detach
	bytes      atomic.Int64  // changed only under mu
	entries    atomic.Int64  // changed only under mu
	indexBytes atomic.Int64  // changed only under mu

	hits, misses, writes, writeErrors, noSpace, corrupt, evictions atomic.Uint64

	// The file system, replaced by tests: writeFile writes to a temp file,
	// removeFile unlinks, freeSpace reports the space left, syncDir syncs a
	// directory.
	writeFile  func(f *os.File, p []byte) (int, error)
	removeFile func(path string) error
	freeSpace  func(dir string) (int64, error)
	syncDir    func(dir string)
}

// Open opens (creating if needed) the directory and rebuilds the index from
// the files in it. log may be nil.
func Open(cfg Config, log *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	cfg.Now = defaults.Clock(cfg.Now)
	log = defaults.Logger(log)
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk: create %s: %w", cfg.Dir, err)
	}
	free, block, statErr := statfs(cfg.Dir)
	s := &Store{
		cfg:        cfg,
		log:        log,
		block:      min(max(block, minBlock), maxBlock),
		writeFile:  (*os.File).Write,
		removeFile: os.Remove,
		syncDir:    syncDir,
		freeSpace: func(dir string) (int64, error) {
			free, _, err := statfs(dir)
			return free, err
		},
	}
	s.unlinked.L = &s.mu
	found, err := s.rebuild()
	if err != nil {
		return nil, err
	}
	s.maxBytes = cfg.MaxBytes
	if s.maxBytes == 0 {
		if statErr != nil {
			return nil, fmt.Errorf("disk: free space of %s: %w", cfg.Dir, statErr)
		}
		s.maxBytes = min(int64(float64(free+s.bytes.Load())*defaultShare), MaxDefaultBytes)
	}
	s.limit.Store(s.maxBytes)
	s.mu.Lock()
	evicted := s.evictLocked(0)
	s.mu.Unlock()
	log.Info("disk: opened", "dir", cfg.Dir, "entries", s.entries.Load(), "bytes", s.bytes.Load(),
		"max_bytes", s.maxBytes, "block", s.block, "found", found, "evicted", evicted, "corrupt", s.corrupt.Load())
	return s, nil
}

// rebuild indexes the files in Dir, oldest first into the SIEVE queue, and
// removes temp files and files that fail the header checks.
func (s *Store) rebuild() (found int, err error) {
	type rebuilt struct {
		e        *entry
		storedAt time.Time
	}
	var files []rebuilt
	walkErr := filepath.WalkDir(s.cfg.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == s.cfg.Dir {
				return err
			}
			s.log.Warn("disk: cannot read", "path", path, "err", err)
			return nil
		}
		rel, _ := filepath.Rel(s.cfg.Dir, path)
		if d.IsDir() {
			if path != s.cfg.Dir && !isFanoutDir(rel) {
				return filepath.SkipDir // not ours
			}
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, tempPrefix) {
			s.log.Info("disk: removing leftover temp file", "path", path)
			s.remove(path)
			return nil
		}
		if !isTileFile(rel) {
			return nil // not ours: leave it alone
		}
		found++
		e, storedAt, err := s.readEntry(path, rel)
		if err != nil {
			s.corrupt.Add(1)
			s.log.Warn("disk: removing bad file", "path", path, "err", err)
			s.remove(path)
			return nil
		}
		files = append(files, rebuilt{e, storedAt})
		return nil
	})
	if walkErr != nil {
		return found, fmt.Errorf("disk: read %s: %w", s.cfg.Dir, walkErr)
	}
	slices.SortFunc(files, func(a, b rebuilt) int { return a.storedAt.Compare(b.storedAt) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files {
		s.index.Insert(f.e.key, f.e)
		s.pushLocked(f.e)
	}
	return found, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isFanoutDir(rel string) bool { return len(rel) == 2 && isHex(rel) }

func isTileFile(rel string) bool {
	dir, file := filepath.Split(rel)
	h, ok := strings.CutSuffix(file, fileSuffix)
	return ok && len(h) == nameHexLen && isHex(h) && dir == h[:2]+string(filepath.Separator)
}

// readEntry reads a file's header and metadata and checks them against its
// length and its name.
func (s *Store) readEntry(path, rel string) (*entry, time.Time, error) {
	f, err := rawfile.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, time.Time{}, err
	}
	p, m, off, err := readHeader(f, size)
	if err != nil {
		return nil, time.Time{}, err
	}
	if fileName(m.key) != rel {
		return nil, time.Time{}, formatErr("file name does not match its key %q", m.key)
	}
	return &entry{key: m.key, cost: s.charge(size), bodySize: p.bodyLen, etag: m.etag, off: int32(off)}, m.storedAt, nil
}

// charge is what a file of size bytes costs against the bound.
func (s *Store) charge(size int64) int64 { return (size + s.block - 1) / s.block * s.block }

func (s *Store) path(rel string) string { return filepath.Join(s.cfg.Dir, rel) }

func (s *Store) pathOf(e *entry) string { return s.path(fileName(e.key)) }

// remove unlinks a file; a file already gone is fine. It returns any other
// failure, which it also logs.
func (s *Store) remove(path string) error {
	if err := s.removeFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("disk: remove failed", "path", path, "err", err)
		return err
	}
	return nil
}

// lookup finds key's entry and marks it visited and read.
func (s *Store) lookup(key string) (*entry, bool) {
	s.mu.Lock()
	e, ok := s.index.Get(key)
	if ok {
		e.visited = true
		s.reads++
		e.lastRead = s.reads
	}
	s.mu.Unlock()
	if !ok {
		s.misses.Add(1)
	}
	return e, ok
}

// opened is a file openFile opened and the header it verified.
type opened struct {
	f   rawfile.File
	p   parsedHeader
	m   meta
	off int64 // where the body begins
	// atBody reports that the file's position is off (its header was read
	// from it, not at an offset).
	atBody bool
}

// openFile opens e's file and verifies its header and key. On failure it
// has discarded e and counted a miss.
//
// With known, a file the store knows whole (entry.verified) has its header
// and metadata read from its position, exactly as long as the index says
// they are, which leaves the file at its body, and its length is not
// checked again: a body sent from it ends where the header says (Body
// notices a file that ends before). Any other (or one whose header has
// another length: a newer version's, renamed over it since the lookup) is
// checked against its length.
func (s *Store) openFile(e *entry, known bool) (opened, bool) {
	f, err := rawfile.Open(s.pathOf(e))
	if err != nil {
		s.failed(e, err)
		return opened{}, false
	}
	o := opened{f: f}
	if known && e.verified.Load() && e.off > 0 {
		o.p, o.m, err = readKnownHeader(f, int(e.off))
		o.off, o.atBody = int64(e.off), err == nil
	}
	if !o.atBody {
		var size int64
		if size, err = f.Size(); err == nil {
			o.p, o.m, o.off, err = readHeader(f, size)
		}
	}
	if err == nil && o.m.key != e.key {
		err = formatErr("file holds key %q", o.m.key)
	}
	if err != nil {
		f.Close()
		s.failed(e, err)
		return opened{}, false
	}
	return o, true
}

// failed is discard and a miss.
func (s *Store) failed(e *entry, err error) {
	s.discard(e, err)
	s.misses.Add(1)
}

// discard drops e after its file could not be read or verified, unlinking
// the file if it is corrupt.
func (s *Store) discard(e *entry, err error) {
	corrupt := errors.Is(err, ErrCorrupt)
	switch {
	case corrupt:
		s.corrupt.Add(1)
		s.log.Warn("disk: removing corrupt file", "key", e.key, "file", fileName(e.key), "err", err)
	case !errors.Is(err, fs.ErrNotExist):
		s.log.Warn("disk: read failed", "key", e.key, "err", err)
	}
	s.drop(e, corrupt)
}

// Get reads and verifies key's file. A file that fails verification is
// removed and reported as a miss. The body is its own allocation of exactly
// its length, so a tile handed on to the memory tier holds nothing more.
func (s *Store) Get(key string) (*tile.Tile, bool) {
	e, ok := s.lookup(key)
	if !ok {
		return nil, false
	}
	o, ok := s.openFile(e, false)
	if !ok {
		return nil, false
	}
	defer o.f.Close()
	body := make([]byte, o.p.bodyLen)
	if _, err := o.f.ReadAt(body, o.off); err != nil && !(errors.Is(err, io.EOF) && len(body) == 0) {
		s.failed(e, readErr("body", err))
		return nil, false
	}
	if crc32.Checksum(body, castagnoli) != o.p.bodyCRC {
		s.failed(e, formatErr("body checksum mismatch"))
		return nil, false
	}
	e.verified.Store(true)
	s.hits.Add(1)
	return o.m.tile(body), true
}

// drop removes e from the index (and its file, if unlink) unless it has been
// replaced or removed meanwhile.
func (s *Store) drop(e *entry, unlink bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.index.Get(e.key); !ok || cur != e {
		return
	}
	s.index.Delete(e.key)
	s.unlinkLocked(e)
	if unlink {
		s.remove(s.pathOf(e))
	}
}

// Stat reports key's index entry without reading its file or marking it
// visited.
func (s *Store) Stat(key string) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.index.Get(key)
	if !ok {
		return Item{}, false
	}
	ago := int64(-1)
	if e.lastRead != 0 {
		ago = int64(s.reads - e.lastRead) // wraps: distances under 2^32
	}
	return Item{Key: e.key, Size: e.bodySize, ETag: e.etag, ReadsAgo: ago}, true
}

// Put stores t under key, replacing any earlier version. It makes room
// (evicts) for the file before writing it; if the file system is full
// nonetheless (ENOSPC), it lowers the bound it works under to what the file
// system held, evicts down to it and retries once.
func (s *Store) Put(key string, t *tile.Tile) error {
	return s.PutSince(s.Mark(), key, t)
}

// Mark is a point in the store's sequence of removals (Delete,
// DeletePrefix, Detach), for PutSince.
type Mark uint64

// Mark returns the store's point now. A caller that takes it under its own
// lock, and then writes with PutSince outside that lock, knows that any
// removal its lock orders after the mark wins over the write.
func (s *Store) Mark() Mark { return Mark(s.purges.Load()) }

// PutSince is Put, but not committed (ErrPurged) if any Delete,
// DeletePrefix or Detach ran since m: a purge that ran before the write
// began wins over it as well as one that runs while it writes.
func (s *Store) PutSince(m Mark, key string, t *tile.Tile) error {
	if err := tile.ValidateKey(key); err != nil {
		return fmt.Errorf("disk: put: %w", err)
	}
	if t == nil {
		return errors.New("disk: put: nil tile")
	}
	storedAt := t.StoredAt
	if storedAt.IsZero() {
		storedAt = s.cfg.Now()
	}
	hdr, err := encodeHeader(meta{key: key, contentType: t.ContentType, contentEncoding: t.ContentEncoding,
		etag: t.ETag, lastModified: t.LastModified, storedAt: storedAt}, t.Body)
	if err != nil {
		return fmt.Errorf("disk: put %q: %w", key, err)
	}
	cost := s.charge(int64(len(hdr)) + int64(len(t.Body)))
	if cost > s.maxBytes {
		return fmt.Errorf("disk: put %q (%d bytes, bound %d): %w", key, cost, s.maxBytes, ErrTooLarge)
	}
	rel := fileName(key)
	dir := filepath.Dir(s.path(rel))

	s.mu.Lock()
	purges := uint64(m)
	if s.purges.Load() != purges {
		s.mu.Unlock()
		return fmt.Errorf("disk: put %q: %w", key, ErrPurged)
	}
	s.makeRoomLocked(cost)
	s.reserved += cost
	s.mu.Unlock()

	tmp, err := s.writeTemp(dir, hdr, t.Body)
	if errors.Is(err, syscall.ENOSPC) {
		s.noSpace.Add(1)
		s.mu.Lock()
		// The file system filled before the bound did: it holds about what
		// the store holds now, less this file. Work under that from now on.
		s.limit.Store(max(0, min(s.limit.Load(), s.bytes.Load()+s.reserved-cost)))
		n := s.evictLocked(0)
		s.mu.Unlock()
		s.log.Warn("disk: file system full; evicted and retrying", "key", key, "evicted", n, "limit", s.limit.Load())
		tmp, err = s.writeTemp(dir, hdr, t.Body)
	}
	if err := s.commit(key, rel, tmp, err, cost, purges, len(hdr), t); err != nil {
		return err
	}
	if s.cfg.Fsync {
		// After the store's lock: a Delete or Detach (and so a purge
		// above) must not wait for another file's directory sync.
		s.syncDir(dir)
	}
	return nil
}

// commit renames a written temp file into place and indexes it, unless a
// removal ran since purges (ErrPurged); werr is the write's error.
func (s *Store) commit(key, rel, tmp string, werr error, cost int64, purges uint64, off int, t *tile.Tile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= cost
	if werr != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("disk: put %q: %w", key, werr)
	}
	// A file of this key that an Unlink is removing right now must be gone
	// before the rename puts the new one there.
	for d := s.detached[key]; d != nil && d.state == unlinking; d = s.detached[key] {
		s.unlinked.Wait()
	}
	if s.purges.Load() != purges {
		s.remove(tmp)
		return fmt.Errorf("disk: put %q: %w", key, ErrPurged)
	}
	d := s.detached[key]
	if err := os.Rename(tmp, s.path(rel)); err != nil {
		s.remove(tmp)
		s.writeErrors.Add(1)
		return fmt.Errorf("disk: put %q: %w", key, err)
	}
	if d != nil {
		// The rename replaced the detached file: nothing is left to unlink.
		delete(s.detached, key)
	}
	if old, ok := s.index.Get(key); ok {
		// The rename replaced its file; only the index still counts it.
		s.unlinkLocked(old)
	}
	// Others may have committed meanwhile; the hand must not pick the new
	// entry, so room is made before it is queued.
	s.evictLocked(cost)
	// Clones, so the index pins no larger string the caller's key or ETag
	// may be part of, and IndexBytes counts what it holds.
	e := &entry{key: strings.Clone(key), cost: cost, bodySize: int64(len(t.Body)), etag: strings.Clone(t.ETag), off: int32(off)}
	e.verified.Store(true) // written whole from the bytes its checksum was computed from
	s.index.Insert(e.key, e)
	s.pushLocked(e)
	s.writes.Add(1)
	return nil
}

// makeRoomLocked evicts until room more bytes fit under the limit. While
// the limit is below MaxBytes it first raises it by what the file system
// reports free, so space that others released is used again.
func (s *Store) makeRoomLocked(room int64) {
	if lim := s.limit.Load(); lim < s.maxBytes && s.bytes.Load()+s.reserved+room > lim {
		if free, err := s.freeSpace(s.cfg.Dir); err == nil {
			s.limit.Store(min(s.maxBytes, max(lim, s.bytes.Load()+s.reserved+free)))
		}
	}
	s.evictLocked(room)
}

// writeTemp writes the file into a temp file in dir and returns its path. On
// any error the temp file is gone.
func (s *Store) writeTemp(dir string, hdr, body []byte) (path string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, tempPattern)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			s.remove(f.Name())
		}
	}()
	if _, err := s.writeFile(f, hdr); err != nil {
		return "", err
	}
	if _, err := s.writeFile(f, body); err != nil {
		return "", err
	}
	if s.cfg.Fsync {
		if err := f.Sync(); err != nil {
			return "", err
		}
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// pushLocked puts e at the head of the SIEVE queue and counts it.
func (s *Store) pushLocked(e *entry) {
	s.sieve.PushHead(e)
	s.countLocked(e, 1)
}

// unlinkLocked takes e out of the SIEVE queue and the counts (not the index).
func (s *Store) unlinkLocked(e *entry) {
	s.sieve.Remove(e)
	s.countLocked(e, -1)
}

// countLocked adds e to the counts (sign 1) or takes it out of them (-1).
func (s *Store) countLocked(e *entry, sign int64) {
	s.bytes.Add(sign * e.cost)
	s.entries.Add(sign)
	s.indexBytes.Add(sign * e.indexBytes())
}

// evictLocked evicts with SIEVE until room more bytes fit under the limit
// besides what in-flight Puts reserved, removing the victims' files, and
// returns how many it evicted.
func (s *Store) evictLocked(room int64) int {
	n := 0
	for s.bytes.Load()+s.reserved+room > s.limit.Load() {
		e := s.sieve.Evict()
		if e == nil {
			break
		}
		s.index.Delete(e.key)
		s.countLocked(e, -1)
		s.remove(s.pathOf(e))
		s.evictions.Add(1)
		n++
	}
	return n
}

// Delete removes key and reports whether it was present. A Put of key that
// is writing meanwhile will not be committed.
func (s *Store) Delete(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purges.Add(1)
	e, ok := s.index.Delete(key)
	if !ok {
		return false
	}
	s.unlinkLocked(e)
	s.remove(s.pathOf(e))
	return true
}

// Detached is what Detach took out of the index: the counts, and the files
// still to be unlinked.
type Detached struct {
	Entries int
	Bytes   int64 // as charged against MaxBytes

	s       *Store
	prefix  string
	entries []*entry
}

// Detach removes every key that starts with prefix ("" is everything) from
// the index and returns what went, touching no file: it costs a walk of the
// index under its lock, not a file system call per file, so a caller may
// hold its own lock around it. A Put that is writing meanwhile will not be
// committed. The files stay on disk, never served or indexed again by this
// store, until Unlink removes them; Unlink must follow (outside the caller's
// lock), or they stay until a restart indexes them again.
func (s *Store) Detach(prefix string) Detached {
	d := Detached{s: s, prefix: prefix}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purges.Add(1)
	s.index.DeletePrefix(prefix, func(_ string, e *entry) {
		s.unlinkLocked(e)
		e.state = detached
		if s.detached == nil {
			s.detached = make(map[string]*entry)
		}
		s.detached[e.key] = e
		d.entries = append(d.entries, e)
		d.Bytes += e.cost
	})
	d.Entries = len(d.entries)
	return d
}

// Unlink removes the detached files, a batch at a time, holding the store's
// lock only to claim each batch: Gets, and Puts of other keys, go on
// meanwhile; a Put of a key whose file is in the batch being removed waits
// for that batch. A file a Put has since replaced is left alone. err
// reports files that could not be unlinked (a read-only disk), other than
// ones already gone: they would come back when the index is rebuilt after a
// restart, so a caller that records the purge as applied on disk (the
// journal position) must not do so. Calling Unlink again retries them.
func (d Detached) Unlink() error {
	s := d.s
	if s == nil {
		return nil
	}
	var errs []error
	failed := 0
	batch := make([]*entry, 0, unlinkBatch)
	var bad []bool
	for i := 0; i < len(d.entries); i += unlinkBatch {
		batch = batch[:0]
		s.mu.Lock()
		for _, e := range d.entries[i:min(i+unlinkBatch, len(d.entries))] {
			if s.detached[e.key] == e && e.state == detached {
				e.state = unlinking
				batch = append(batch, e)
			}
		}
		s.mu.Unlock()
		bad = bad[:0]
		for _, e := range batch {
			err := s.remove(s.pathOf(e))
			bad = append(bad, err != nil)
			if err != nil {
				if failed++; len(errs) < 8 {
					errs = append(errs, err)
				}
			}
		}
		s.mu.Lock()
		for j, e := range batch {
			if bad[j] {
				e.state = detached // stays to be retried, or replaced by a Put
			} else {
				delete(s.detached, e.key)
			}
		}
		if len(s.detached) == 0 {
			s.detached = nil // a map keeps its buckets after deletes
		}
		s.unlinked.Broadcast()
		s.mu.Unlock()
	}
	if failed > 0 {
		return fmt.Errorf("disk: purge %q: %d files left behind: %w", d.prefix, failed, errors.Join(errs...))
	}
	return nil
}

// DeletePrefix removes every key that starts with prefix ("" is everything)
// and returns how many entries and charged bytes went: Detach, then Unlink.
// err is Unlink's.
func (s *Store) DeletePrefix(prefix string) (entries int, bytes int64, err error) {
	d := s.Detach(prefix)
	return d.Entries, d.Bytes, d.Unlink()
}

// Scan calls fn for up to limit entries (limit ≤ 0: all) whose keys start
// with prefix, in key order, until fn returns false. It copies the index a
// chunk at a time, so writers are never held up for long; entries changed
// during a scan may or may not be seen.
func (s *Store) Scan(prefix string, limit int, fn func(Item) bool) {
	next := func(items []Item, after string, _ bool, want int) []Item {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.index.WalkPrefixFrom(prefix, after, func(_ string, e *entry) bool {
			items = append(items, Item{Key: e.key, Size: e.bodySize, ETag: e.etag})
			return len(items) < want
		})
		return items
	}
	chunk.Scan(make([]Item, 0, scanChunk), limit, func(it Item) string { return it.Key }, next, fn)
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{
		Hits:        s.hits.Load(),
		Misses:      s.misses.Load(),
		Writes:      s.writes.Load(),
		WriteErrors: s.writeErrors.Load(),
		NoSpace:     s.noSpace.Load(),
		Corrupt:     s.corrupt.Load(),
		Evictions:   s.evictions.Load(),
		Entries:     s.entries.Load(),
		Bytes:       s.bytes.Load(),
		MaxBytes:    s.maxBytes,
		LimitBytes:  s.limit.Load(),
		BlockSize:   s.block,
		IndexBytes:  s.indexBytes.Load(),
	}
}

// Len returns the number of entries.
func (s *Store) Len() int { return int(s.entries.Load()) }

// Bytes returns what the files held are charged, in whole blocks.
func (s *Store) Bytes() int64 { return s.bytes.Load() }

// MaxBytes returns the byte bound.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.cfg.Dir }

// Charge is what a tile would cost against MaxBytes under key: its file's
// length (FileSize) rounded up to the store's block.
func (s *Store) Charge(key string, t *tile.Tile) int64 { return s.charge(FileSize(key, t)) }

// ChargeSize is what a file of size bytes costs against MaxBytes: size
// rounded up to the store's block.
func (s *Store) ChargeSize(size int64) int64 { return s.charge(size) }

// FileSize is the length of the file a tile would have under key. A store
// charges it in whole blocks (Store.Charge).
func FileSize(key string, t *tile.Tile) int64 {
	hdr, err := encodeHeader(meta{key: key, contentType: t.ContentType, contentEncoding: t.ContentEncoding, etag: t.ETag,
		lastModified: t.LastModified, storedAt: t.StoredAt}, nil)
	if err != nil {
		return int64(len(t.Body))
	}
	return int64(len(hdr)) + int64(len(t.Body))
}

// Spare is the space of Dir's file system the store will never claim: what
// is free less the room the store may still fill up to MaxBytes. A file kept
// beside the store (a staged tileset archive) must fit in it, or the store
// would later run the file system full.
func (s *Store) Spare() (int64, error) {
	free, _, err := statfs(s.cfg.Dir)
	if err != nil {
		return 0, fmt.Errorf("disk: free space of %s: %w", s.cfg.Dir, err)
	}
	return free - max(0, s.maxBytes-s.bytes.Load()), nil
}
