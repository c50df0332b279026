package pmtiles

import (
	"context"
	"fmt"
)

// checkEntries checks that every entry of a directory lies inside the
// section it points into: the tile data for tiles, the leaf directories for
// leaves. Open runs it on the root, so an archive whose root names bytes
// past its sections (a truncated or mangled file) is refused when it is
// opened rather than on each tile.
func checkEntries(h Header, entries []Entry) error {
	for _, e := range entries {
		what, secLen := "tile data", h.TileDataLength
		if e.IsLeaf() {
			what, secLen = "leaf directory", h.LeafDirectoryLength
		}
		if e.Offset >= secLen || uint64(e.Length) > secLen-e.Offset {
			return invalid("tile id %d: %s at %d+%d lies outside its section (%d bytes)", e.TileID, what, e.Offset, e.Length, secLen)
		}
	}
	return nil
}

// Verify reads and checks every leaf directory of the archive, to the depth
// limit: each decodes, and each entry lies inside its section. With the
// checks Open makes (header, sections inside the archive, root directory)
// it is what can be known of an archive without reading its tiles. It reads
// every leaf once (through the LeafCache), so it suits a local file or an
// upload, not the request path. A leaf that several entries name is read
// and checked once, and leaves that together pass the leaf section's length
// (they overlap, which no writer does) are refused, so Verify reads at most
// the leaf section once.
func (r *Reader) Verify(ctx context.Context) error {
	v := verifier{seen: map[Range]bool{}, budget: int64(r.header.LeafDirectoryLength)}
	return r.verify(ctx, r.root, 1, &v)
}

// verifier is the state of one Verify: the leaves read, and how many bytes
// of leaves may still be read.
type verifier struct {
	seen   map[Range]bool
	budget int64
}

func (r *Reader) verify(ctx context.Context, dir []Entry, depth int, v *verifier) error {
	for _, e := range dir {
		if !e.IsLeaf() {
			continue
		}
		if depth >= r.opts.MaxDepth {
			return invalid("leaf directories nested deeper than %d (a cycle?)", r.opts.MaxDepth)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pmtiles: verify: %w", err)
		}
		leaf, err := r.inSection("leaf directory", e, r.header.LeafDirectoryOffset, r.header.LeafDirectoryLength)
		if err != nil {
			return err
		}
		if v.seen[leaf] {
			continue
		}
		v.seen[leaf] = true
		if v.budget -= leaf.Length; v.budget < 0 {
			return invalid("leaf directories overlap: more than the %d bytes of the leaf section", r.header.LeafDirectoryLength)
		}
		d, err := r.Leaf(ctx, leaf)
		if err != nil {
			return err
		}
		if err := checkEntries(r.header, d); err != nil {
			return fmt.Errorf("pmtiles: leaf directory at %d+%d: %w", leaf.Offset, leaf.Length, err)
		}
		if err := r.verify(ctx, d, depth+1, v); err != nil {
			return err
		}
	}
	return nil
}
