// Package disk is the /tmp tier: tiles kept as files in a local directory,
// bounded in bytes with SIEVE eviction, surviving warm invocations and a
// process restart inside a live Lambda execution environment.
//
// What it promises:
//
//   - A torn or corrupt file is never served. Every file carries CRC32C
//     checksums of its header and body and its own tile key; Get verifies
//     them, and a file that fails is removed, logged at warn and reported as
//     a miss.
//   - Writes are atomic: a temp file in the same directory, fsync when
//     configured, then rename. A write that fails (ENOSPC, anything) removes
//     its temp file and returns an error; callers degrade to memory + origin.
//   - Open rebuilds the index from the files found in Dir (reading headers
//     only), removes leftover temp files and files with bad headers, and
//     evicts down to MaxBytes.
//   - The bytes of the files (headers included) stay within MaxBytes.
//   - Delete and DeletePrefix win over a Put that was writing when they ran:
//     that Put is not committed (ErrPurged), so a purged tile does not come
//     back from a fill that started before the purge reached the disk.
//
// File names are derived from a hash of the key (see fileName), never from
// the key itself, so any key the key rules allow is safe.
package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/radix"
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
)

// Errors.
var (
	// ErrTooLarge is a tile whose file would not fit in MaxBytes at all.
	ErrTooLarge = errors.New("disk: tile larger than the disk bound")
	// ErrPurged is a Put overtaken by a Delete or DeletePrefix while it was
	// writing; nothing was stored.
	ErrPurged = errors.New("disk: purged while being written")
)

// Config configures a Store.
type Config struct {
	Dir string // DISK_CACHE_DIR, default "/tmp/tilesieve"
	// MaxBytes bounds the bytes of the files (DISK_CACHE_BYTES); 0 means 80%
	// of the space free at Open plus what the store already holds, at most
	// 10 GiB.
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
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("disk: DISK_CACHE_BYTES %d is negative", c.MaxBytes))
	}
	if strings.ContainsRune(c.Dir, 0) {
		errs = append(errs, fmt.Errorf("disk: DISK_CACHE_DIR %q contains a NUL byte", c.Dir))
	}
	return errors.Join(errs...)
}

// Item is one entry reported by Scan and Stat.
type Item struct {
	Key  string `json:"key"`
	Size int64  `json:"size"` // body bytes
	ETag string `json:"etag"`
}

// Stats are the store's counters.
type Stats struct {
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
	Writes      uint64 `json:"writes"`
	WriteErrors uint64 `json:"write_errors"`
	Corrupt     uint64 `json:"corrupt"`
	Evictions   uint64 `json:"evictions"`
	Entries     int64  `json:"entries"`
	Bytes       int64  `json:"bytes"`
	MaxBytes    int64  `json:"max_bytes"`
}

// entry is the index's record of one file. key, name, the sizes and etag
// never change once the entry is made; visited, prev and next are guarded by
// Store.mu.
type entry struct {
	key      string
	name     string // path relative to Dir
	fileSize int64  // what the file costs against MaxBytes
	bodySize int64
	etag     string
	visited  bool // SIEVE: read since the hand last passed

	// SIEVE queue, newest at head; the hand walks from tail towards head.
	prev, next *entry // prev is towards the head (newer), next towards the tail
}

// Store is the disk tier. It is safe for concurrent use.
type Store struct {
	cfg      Config
	log      *slog.Logger
	maxBytes int64

	// fileMu orders renames against DeletePrefix: a Put renames under
	// RLock, DeletePrefix unlinks the files it detached under Lock (without
	// holding mu, so readers carry on). Lock order: fileMu, then mu.
	fileMu sync.RWMutex

	mu         sync.Mutex // guards index, head, tail, hand and every entry's mutable fields
	index      radix.Tree[*entry]
	head, tail *entry
	hand       *entry

	purges  atomic.Uint64 // bumped under mu by Delete and DeletePrefix
	bytes   atomic.Int64  // changed only under mu
	entries atomic.Int64  // changed only under mu

	hits, misses, writes, writeErrors, corrupt, evictions atomic.Uint64

	// writeFile writes to a temp file; tests replace it to fail like a full disk.
	writeFile func(f *os.File, p []byte) (int, error)
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk: create %s: %w", cfg.Dir, err)
	}
	s := &Store{cfg: cfg, log: log, writeFile: (*os.File).Write}
	found, err := s.rebuild()
	if err != nil {
		return nil, err
	}
	s.maxBytes = cfg.MaxBytes
	if s.maxBytes == 0 {
		free, err := freeBytes(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("disk: free space of %s: %w", cfg.Dir, err)
		}
		s.maxBytes = min(int64(float64(free+s.bytes.Load())*defaultShare), MaxDefaultBytes)
	}
	s.mu.Lock()
	evicted := s.evictLocked(0)
	s.mu.Unlock()
	log.Info("disk: opened", "dir", cfg.Dir, "entries", s.entries.Load(), "bytes", s.bytes.Load(),
		"max_bytes", s.maxBytes, "found", found, "evicted", evicted, "corrupt", s.corrupt.Load())
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
		e, storedAt, err := readEntry(path, rel)
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
func readEntry(path, rel string) (*entry, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	fixed := make([]byte, headerLen)
	if _, err := readFull(f, fixed); err != nil {
		return nil, time.Time{}, formatErr("short header")
	}
	p, err := parseFixed(fixed)
	if err != nil {
		return nil, time.Time{}, err
	}
	if want := int64(headerLen) + int64(p.metaLen) + p.bodyLen; st.Size() != want {
		return nil, time.Time{}, formatErr("file is %d bytes, header says %d (torn)", st.Size(), want)
	}
	h := make([]byte, headerLen+p.metaLen)
	copy(h, fixed)
	if _, err := readFull(f, h[headerLen:]); err != nil {
		return nil, time.Time{}, formatErr("short metadata")
	}
	m, err := decodeMeta(p, h)
	if err != nil {
		return nil, time.Time{}, err
	}
	if fileName(m.key) != rel {
		return nil, time.Time{}, formatErr("file name does not match its key %q", m.key)
	}
	return &entry{key: m.key, name: rel, fileSize: st.Size(), bodySize: p.bodyLen, etag: m.etag}, m.storedAt, nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Store) path(rel string) string { return filepath.Join(s.cfg.Dir, rel) }

// remove unlinks a file; a file already gone is fine. It returns any other
// failure, which it also logs.
func (s *Store) remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("disk: remove failed", "path", path, "err", err)
		return err
	}
	return nil
}

// Get reads and verifies key's file. A file that fails verification is
// removed and reported as a miss.
func (s *Store) Get(key string) (*tile.Tile, bool) {
	s.mu.Lock()
	e, ok := s.index.Get(key)
	if ok {
		e.visited = true
	}
	s.mu.Unlock()
	if !ok {
		s.misses.Add(1)
		return nil, false
	}
	b, err := os.ReadFile(s.path(e.name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("disk: read failed", "key", key, "err", err)
		}
		s.drop(e, false)
		s.misses.Add(1)
		return nil, false
	}
	m, t, err := decodeFile(b)
	if err == nil && m.key != key {
		err = formatErr("file holds key %q", m.key)
	}
	if err != nil {
		s.corrupt.Add(1)
		s.log.Warn("disk: removing corrupt file", "key", key, "file", e.name, "err", err)
		s.drop(e, true)
		s.misses.Add(1)
		return nil, false
	}
	s.hits.Add(1)
	return t, true
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
		s.remove(s.path(e.name))
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
	return Item{Key: e.key, Size: e.bodySize, ETag: e.etag}, true
}

// Put stores t under key, replacing any earlier version, and evicts to stay
// within MaxBytes.
func (s *Store) Put(key string, t *tile.Tile) error {
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
	size := int64(len(hdr)) + int64(len(t.Body))
	if size > s.maxBytes {
		return fmt.Errorf("disk: put %q (%d bytes, bound %d): %w", key, size, s.maxBytes, ErrTooLarge)
	}
	purges := s.purges.Load()
	rel := fileName(key)

	tmp, err := s.writeTemp(filepath.Dir(s.path(rel)), hdr, t.Body)
	if err != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("disk: put %q: %w", key, err)
	}

	s.fileMu.RLock()
	defer s.fileMu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.purges.Load() != purges {
		s.remove(tmp)
		return fmt.Errorf("disk: put %q: %w", key, ErrPurged)
	}
	if err := os.Rename(tmp, s.path(rel)); err != nil {
		s.remove(tmp)
		s.writeErrors.Add(1)
		return fmt.Errorf("disk: put %q: %w", key, err)
	}
	if s.cfg.Fsync {
		syncDir(filepath.Dir(s.path(rel)))
	}
	if old, ok := s.index.Get(key); ok {
		// The rename replaced its file; only the index still counts it.
		s.unlinkLocked(old)
	}
	// Make room before queuing the new entry, so the hand cannot pick it.
	s.evictLocked(size)
	e := &entry{key: key, name: rel, fileSize: size, bodySize: int64(len(t.Body)), etag: t.ETag}
	s.index.Insert(key, e)
	s.pushLocked(e)
	s.writes.Add(1)
	return nil
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
	e.prev, e.next = nil, s.head
	if s.head != nil {
		s.head.prev = e
	}
	s.head = e
	if s.tail == nil {
		s.tail = e
	}
	s.bytes.Add(e.fileSize)
	s.entries.Add(1)
}

// unlinkLocked takes e out of the SIEVE queue and the counts (not the index).
func (s *Store) unlinkLocked(e *entry) {
	if s.hand == e {
		s.hand = e.prev
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
	s.bytes.Add(-e.fileSize)
	s.entries.Add(-1)
}

// evictLocked evicts with SIEVE until room more bytes fit within the bound,
// removing the victims' files, and returns how many it evicted. The hand
// walks from the oldest entry towards the newest, sparing (and clearing)
// entries read since it last passed.
func (s *Store) evictLocked(room int64) int {
	n := 0
	for s.bytes.Load()+room > s.maxBytes && s.tail != nil {
		e := s.hand
		if e == nil {
			e = s.tail
		}
		for e.visited {
			e.visited = false
			e = e.prev
			if e == nil {
				e = s.tail
			}
		}
		s.hand = e.prev
		s.index.Delete(e.key)
		s.unlinkLocked(e)
		s.remove(s.path(e.name))
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
	s.remove(s.path(e.name))
	return true
}

// DeletePrefix removes every key that starts with prefix ("" is everything)
// and returns how many entries and file bytes went. Readers of other keys
// are not held up while the files are unlinked; Puts wait.
//
// The entries leave the index whatever happens, but a file that could not be
// unlinked (a read-only disk) would come back when the index is rebuilt
// after a restart; err reports such files, so a caller that records the
// purge as applied on disk (the journal position) can refuse to.
func (s *Store) DeletePrefix(prefix string) (entries int, bytes int64, err error) {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	var names []string
	s.mu.Lock()
	s.purges.Add(1)
	s.index.DeletePrefix(prefix, func(_ string, e *entry) {
		s.unlinkLocked(e)
		names = append(names, e.name)
		bytes += e.fileSize
	})
	s.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := s.remove(s.path(name)); err != nil && len(errs) < 8 {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return len(names), bytes, fmt.Errorf("disk: purge %q: files left behind: %w", prefix, errors.Join(errs...))
	}
	return len(names), bytes, nil
}

// Scan calls fn for up to limit entries (limit ≤ 0: all) whose keys start
// with prefix, in key order, until fn returns false. It copies the index a
// chunk at a time, so writers are never held up for long; entries changed
// during a scan may or may not be seen.
func (s *Store) Scan(prefix string, limit int, fn func(Item) bool) {
	after := ""
	seen := 0
	buf := make([]Item, 0, scanChunk)
	for {
		want := scanChunk
		if limit > 0 {
			want = min(want, limit-seen)
		}
		buf = buf[:0]
		s.mu.Lock()
		s.index.WalkPrefixFrom(prefix, after, func(_ string, e *entry) bool {
			buf = append(buf, Item{Key: e.key, Size: e.bodySize, ETag: e.etag})
			return len(buf) < want
		})
		s.mu.Unlock()
		for _, it := range buf {
			if !fn(it) {
				return
			}
		}
		seen += len(buf)
		if len(buf) < want || (limit > 0 && seen >= limit) {
			return
		}
		after = buf[len(buf)-1].Key
	}
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{
		Hits:        s.hits.Load(),
		Misses:      s.misses.Load(),
		Writes:      s.writes.Load(),
		WriteErrors: s.writeErrors.Load(),
		Corrupt:     s.corrupt.Load(),
		Evictions:   s.evictions.Load(),
		Entries:     s.entries.Load(),
		Bytes:       s.bytes.Load(),
		MaxBytes:    s.maxBytes,
	}
}

// Len returns the number of entries.
func (s *Store) Len() int { return int(s.entries.Load()) }

// Bytes returns the bytes of the files held.
func (s *Store) Bytes() int64 { return s.bytes.Load() }

// MaxBytes returns the byte bound.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.cfg.Dir }

// FileSize is what a tile would cost against MaxBytes under key.
func FileSize(key string, t *tile.Tile) int64 {
	hdr, err := encodeHeader(meta{key: key, contentType: t.ContentType, contentEncoding: t.ContentEncoding, etag: t.ETag,
		lastModified: t.LastModified, storedAt: t.StoredAt}, nil)
	if err != nil {
		return int64(len(t.Body))
	}
	return int64(len(hdr)) + int64(len(t.Body))
}
