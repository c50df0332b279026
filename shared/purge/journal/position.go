package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Position is a follower's place in the journal: the journal's id and the
// last entry applied, by its number and by its digest (EntryDigest), so that
// a different entry found later at that number is seen to be one. A
// position saved before digests were kept has none; a follower cannot tell
// which entry it applied, and treats it as unknown.
type Position struct {
	Journal string `json:"journal"`
	Seq     uint64 `json:"seq"`
	Entry   string `json:"entry,omitempty"` // EntryDigest of entry Seq; "" when unknown
}

// EntryDigest names an entry by its content: 128 bits of the SHA-256 of
// its encoding. Two writers that recorded different purges under one
// number give different digests.
func EntryDigest(e Entry) string {
	b, err := json.Marshal(e)
	if err != nil {
		return "" // an Entry always encodes; "" would only make it unknown
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// At returns the entry numbered seq if s holds it.
func (s Snapshot) At(seq uint64) (Entry, bool) {
	if seq < s.Oldest() || seq > s.Seq || len(s.Entries) == 0 {
		return Entry{}, false
	}
	return s.Entries[seq-s.Oldest()], true
}

// PositionStore keeps a follower's Position with the tiers it describes.
type PositionStore interface {
	// Load returns the saved position; ok is false when none was saved.
	Load() (pos Position, ok bool, err error)
	// Save records pos. It is called only once every purge up to pos has
	// reached the tiers for good.
	Save(pos Position) error
}

// PositionFile is a PositionStore in one file beside the disk tier's files
// (Lambda keeps /tmp, and so both, across a crash of the process). Saves are
// atomic: a temp file, fsync when Fsync is set, then a rename, so a crash
// leaves the old position or the new one, never a torn one.
type PositionFile struct {
	Path  string
	Fsync bool
}

// PositionFileName is the name of the position file in the disk tier's
// directory; the disk tier leaves files it does not own alone.
const PositionFileName = "journal-position.json"

// Load implements PositionStore.
func (p PositionFile) Load() (Position, bool, error) {
	b, err := os.ReadFile(p.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, fmt.Errorf("journal: read position: %w", err)
	}
	var pos Position
	if err := json.Unmarshal(b, &pos); err != nil || (pos.Journal == "" && pos.Seq != 0) {
		return Position{}, false, fmt.Errorf("journal: position %s is corrupt", p.Path)
	}
	return pos, true, nil
}

// Save implements PositionStore.
func (p PositionFile) Save(pos Position) (err error) {
	b, err := json.Marshal(pos)
	if err != nil {
		return fmt.Errorf("journal: encode position: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p.Path), ".position-*")
	if err != nil {
		return fmt.Errorf("journal: save position: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("journal: save position: %w", err)
	}
	if p.Fsync {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("journal: save position: %w", err)
		}
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("journal: save position: %w", err)
	}
	if err = os.Rename(f.Name(), p.Path); err != nil {
		return fmt.Errorf("journal: save position: %w", err)
	}
	return nil
}
