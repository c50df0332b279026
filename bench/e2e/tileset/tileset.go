// Package tileset makes the tiles every end-to-end benchmark serves: real
// JPEGs (image/jpeg) of realistic sizes, under IIIF-like and XYZ keys, and
// the means to put them where each server reads them (an S3 bucket, a
// directory, a map).
//
// Encoding JPEGs is slow next to serving them, so a Set encodes a small pool
// of distinct images once and gives every key its own bytes by adding a JPEG
// comment segment (COM) naming the key: every tile is a valid, distinct JPEG
// whose size is the pool image's plus a few bytes.
package tileset

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Pool is a set of distinct encoded JPEGs.
type Pool [][]byte

// NewPool encodes n JPEGs of side×side pixels whose sizes spread between
// about minBytes and maxBytes (photographic noise over a gradient; the noise
// amplitude is searched per image to land on its target size).
func NewPool(n, side, minBytes, maxBytes int, seed uint64) Pool {
	p := make(Pool, n)
	for i := range n {
		target := minBytes
		if n > 1 {
			target += (maxBytes - minBytes) * i / (n - 1)
		}
		p[i] = encodeNear(side, target, seed+uint64(i))
	}
	return p
}

// encodeNear encodes an image whose size is near target bytes.
func encodeNear(side, target int, seed uint64) []byte {
	lo, hi := 0.0, 1.0
	var best []byte
	for range 9 {
		mid := (lo + hi) / 2
		b := encode(side, mid, seed)
		if best == nil || abs(len(b)-target) < abs(len(best)-target) {
			best = b
		}
		if len(b) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func encode(side int, noise float64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x7115))
	img := image.NewYCbCr(image.Rect(0, 0, side, side), image.YCbCrSubsampleRatio420)
	phase := r.Float64() * 255
	for y := range side {
		for x := range side {
			base := phase + float64(x+y)*128/float64(side)
			v := base + (r.Float64()-0.5)*noise*255
			img.Y[img.YOffset(x, y)] = clamp(v)
		}
	}
	for i := range img.Cb {
		img.Cb[i] = clamp(128 + (r.Float64()-0.5)*noise*64)
		img.Cr[i] = clamp(128 + (r.Float64()-0.5)*noise*64)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return buf.Bytes()
}

func clamp(v float64) uint8 {
	v = float64(int(v) % 256)
	if v < 0 {
		v += 256
	}
	return color.Gray{Y: uint8(v)}.Y
}

// WithComment returns jpg with a COM segment carrying text right after SOI:
// a different, still valid JPEG.
func WithComment(jpg []byte, text string) []byte {
	if len(text) > 65000 {
		text = text[:65000]
	}
	n := len(text) + 2
	out := make([]byte, 0, len(jpg)+n+2)
	out = append(out, jpg[:2]...) // SOI
	out = append(out, 0xFF, 0xFE, byte(n>>8), byte(n))
	out = append(out, text...)
	return append(out, jpg[2:]...)
}

// Tile is one key and its bytes.
type Tile struct {
	Key  string
	Body []byte
}

// Set is a list of tiles with distinct keys.
type Set []Tile

// Build gives each key a distinct JPEG derived from pool.
func Build(keys []string, pool Pool) Set {
	s := make(Set, len(keys))
	for i, k := range keys {
		h := fnv.New64a()
		h.Write([]byte(k))
		s[i] = Tile{Key: k, Body: WithComment(pool[h.Sum64()%uint64(len(pool))], k)}
	}
	return s
}

// ReadDir loads every file under dir as a tile whose key is its path
// relative to dir (the layout the benchmarks write tiles to disk in).
func ReadDir(dir string) (Set, error) {
	var s Set
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		s = append(s, Tile{Key: filepath.ToSlash(rel), Body: b})
		return nil
	})
	return s, err
}

// Bytes is the total body size of the set.
func (s Set) Bytes() int64 {
	var n int64
	for _, t := range s {
		n += int64(len(t.Body))
	}
	return n
}

// Keys lists the keys in order.
func (s Set) Keys() []string {
	out := make([]string, len(s))
	for i, t := range s {
		out[i] = t.Key
	}
	return out
}

// Map returns the set as key → body.
func (s Set) Map() map[string][]byte {
	m := make(map[string][]byte, len(s))
	for _, t := range s {
		m[t.Key] = t.Body
	}
	return m
}

// SizeRange is the smallest and largest body.
func (s Set) SizeRange() (lo, hi int) {
	sizes := make([]int, len(s))
	for i, t := range s {
		sizes[i] = len(t.Body)
	}
	sort.Ints(sizes)
	if len(sizes) == 0 {
		return 0, 0
	}
	return sizes[0], sizes[len(sizes)-1]
}

// ContentType is what the tiles are stored as: the product's type for the
// key's extension, application/octet-stream for one it does not serve.
func ContentType(key string) string {
	if ct := tile.ContentTypeOfExt(strings.TrimPrefix(filepath.Ext(key), ".")); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// Seed puts every tile into bucket under prefix, 16 at a time.
func Seed(ctx context.Context, c *s3.Client, bucket, prefix string, s Set) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, t := range s {
		g.Go(func() error {
			_, err := s3local.Put(ctx, c, bucket, prefix+t.Key, t.Body, ContentType(t.Key), "")
			return err
		})
	}
	return g.Wait()
}

// WriteDir writes every tile as dir/<key>.
func WriteDir(dir string, s Set) error {
	for _, t := range s {
		p := filepath.Join(dir, filepath.FromSlash(t.Key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, t.Body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ---- key layouts --------------------------------------------------------------

// IIIFTile is one tile of an IIIF level-0 pyramid.
type IIIFTile struct {
	Scale int // 1 is full resolution
	Key   string
}

// IIIFPyramid lists the tiles of an image of w×h pixels cut into tile×tile
// tiles at scale factors 1, 2, 4, … until one tile covers the image, as
// `iiif/<image>/<region>/<size>/0/default.jpg`, finest level first.
func IIIFPyramid(imageID string, w, h, tile int) []IIIFTile {
	var out []IIIFTile
	for s := 1; ; s *= 2 {
		span := tile * s
		for y := 0; y < h; y += span {
			for x := 0; x < w; x += span {
				rw, rh := min(span, w-x), min(span, h-y)
				sw := (rw + s - 1) / s
				key := fmt.Sprintf("iiif/%s/%d,%d,%d,%d/%d,/0/default.jpg", imageID, x, y, rw, rh, sw)
				out = append(out, IIIFTile{Scale: s, Key: key})
			}
		}
		if span >= w && span >= h {
			return out
		}
	}
}

// IIIFInfo is the key of an image's info.json.
func IIIFInfo(imageID string) string { return "iiif/" + imageID + "/info.json" }

// IIIFThumb is the key of an image's thumbnail.
func IIIFThumb(imageID string) string { return "iiif/" + imageID + "/full/200,/0/default.jpg" }

// XYZ lists prefix/z/x/y.ext for zooms minZoom..maxZoom, every tile of each.
func XYZ(prefix, ext string, minZoom, maxZoom int) []string {
	var out []string
	for z := minZoom; z <= maxZoom; z++ {
		n := 1 << z
		for x := range n {
			for y := range n {
				out = append(out, fmt.Sprintf("%s/%d/%d/%d.%s", prefix, z, x, y, ext))
			}
		}
	}
	return out
}

// Generated is a deterministic pseudo-random byte stream of a fixed size that
// can be read and seeked without holding it: a large object for staging is
// uploaded from it without a copy in the uploader.
type Generated struct {
	size, off int64
	seed      uint64
}

// NewGenerated returns a stream of size bytes.
func NewGenerated(size int64, seed uint64) *Generated { return &Generated{size: size, seed: seed} }

// Read fills p with the stream's bytes at the current offset.
func (g *Generated) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), g.size-g.off))
	for i := range n {
		o := uint64(g.off + int64(i))
		// A cheap mix of the offset's 8-byte word and the seed.
		w := (o/8 + 1) * (g.seed | 1) * 0x9E3779B97F4A7C15
		p[i] = byte(w >> (8 * (o % 8)))
	}
	g.off += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (g *Generated) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case 0:
	case 1:
		offset += g.off
	case 2:
		offset += g.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("tileset: seek before start")
	}
	g.off = offset
	return offset, nil
}
