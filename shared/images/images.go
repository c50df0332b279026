// Package images serves pyramidal images stored in S3 (a tiled TIFF, a
// COG) as IIIF Image API 3.0 and 2.1 at level 2, as an origin of the tier
// engine: every answer is derived on demand from the stored tiles it covers
// and kept in the tiers under its canonical request, below the image's IIIF
// directory (iiif/3/ID/, iiif/2/ID/), which an upload or delete of ID.tif
// purges.
//
// The HTTP layer turns a request into its key with Key (the canonical form
// needs the image's size, so the image is opened first: once per version,
// its header and IFDs kept by the archive origin); on a miss the engine asks
// Get, which makes the answer:
//
//   - info.json and a one-canvas Presentation 3.0 manifest, with the
//     placeholder base URL the HTTP layer renders for each answer;
//   - a request that is exactly one stored JPEG tile at its level's size
//     (what viewers ask for from info.json's tiles and scaleFactors) is the
//     stored bytes made whole: one ranged read, no decode, no encode;
//   - any other decodes only the stored tiles it covers, from the smallest
//     level that suffices, read together, within a bound on the pixels
//     decoded per request and the decodes run at once, then scales,
//     rotates, applies the quality and encodes once.
//
// Every other key goes on to the next origin.
package images

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/iiifinfo"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Config bounds what the service answers.
type Config struct {
	// Limits are maxWidth, maxHeight and maxArea: advertised in info.json
	// and applied to every answer, full and max included.
	Limits iiif.Limits
	// MaxDecodedPixels bounds the pixels one answer decodes (stored tiles,
	// padding included); a request needing more is refused with 501.
	MaxDecodedPixels int64
	// Pixel tunes the pipeline: JPEG quality, the bound on an encoded
	// answer and on the tiles decoded at once across all answers.
	Pixel pixel.Config
}

// Defaults of Config: answers of at most 4 Mpx (a JPEG of them fits a
// buffered Lambda answer of 6 MB with room), decoding at most 16 Mpx each.
var (
	DefaultLimits           = iiif.Limits{MaxWidth: 4096, MaxHeight: 4096, MaxArea: 4 << 20}
	DefaultMaxDecodedPixels = int64(16 << 20)
)

// Archives opens images; *archive.Origin is one.
type Archives interface {
	Image(ctx context.Context, id string) (*archive.ImageVersion, error)
	Changed(v *archive.ImageVersion)
	Current(ctx context.Context, v *archive.ImageVersion) (string, error)
}

// Service is the IIIF image origin. It is safe for concurrent use.
type Service struct {
	cfg      Config
	archives Archives
	next     tiers.Origin
	render   *iiif.Renderer
	pipe     *pixel.Pipeline
	log      *slog.Logger
	stats    Stats
	refused  refusals
}

// Stats counts how answers were made.
type Stats struct {
	Stored   atomic.Int64 // answered with a stored tile's bytes, no decode
	Rendered atomic.Int64 // decoded, scaled and encoded
	// Refused counts answers made and then refused, their encoding over
	// the bound on an answer's bytes; each is remembered (see refusals).
	Refused atomic.Int64
}

// New builds the service over archives, in front of next.
func New(cfg Config, archives Archives, next tiers.Origin, log *slog.Logger) (*Service, error) {
	if archives == nil || next == nil {
		return nil, errors.New("images: the archives and the next origin are required")
	}
	pipe, err := pixel.New(cfg.Pixel)
	if err != nil {
		return nil, err
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	r, err := iiif.NewRenderer(pipe, cfg.MaxDecodedPixels)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, archives: archives, next: next, render: r, pipe: pipe, log: defaults.Logger(log)}, nil
}

// Stats returns the counters.
func (s *Service) Stats() *Stats { return &s.stats }

// Pixels returns the pipeline's counters: the pixels of the answers being
// made.
func (s *Service) Pixels() pixel.Stats { return s.pipe.Stats() }

// Key is the key of route r's answer in the tiers, its request in the
// canonical form, so that every spelling of one request shares one entry.
// An *iiif.Error is a request the specification refuses (its status); an
// error matching tile.ErrNotFound an image that does not exist.
func (s *Service) Key(ctx context.Context, r iiif.Route) (string, error) {
	switch r.Kind {
	case iiif.RouteInfo, iiif.RouteManifest:
		if _, err := s.open(ctx, r.ID); err != nil {
			return "", err
		}
		if r.Kind == iiif.RouteInfo {
			return r.Dir() + "info.json", nil
		}
		return r.Dir() + "manifest.json", nil
	case iiif.RouteImage:
	default:
		return "", fmt.Errorf("images: %s has no answer of its own", r.Dir())
	}
	req, err := iiif.Parse(r.Version, r.Params[0], r.Params[1], r.Params[2], r.Params[3])
	if err != nil {
		return "", err
	}
	v, err := s.open(ctx, r.ID)
	if err != nil {
		return "", err
	}
	res, err := iiif.Resolve(req, describe(v.Pyramid), s.cfg.Limits)
	if err != nil {
		return "", err
	}
	return r.Dir() + res.Canonical, nil
}

// Get implements tiers.Origin: the answer of an IIIF key (Key), made from
// the image; any other key is the next origin's. A revalidation whose
// answer was made from the image's current version is tile.ErrNotModified,
// answered without making it again.
func (s *Service) Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	r, ok := iiif.ParseKey(key)
	if !ok {
		return s.next.Get(ctx, key, ifNoneMatch)
	}
	for attempt := 0; ; attempt++ {
		v, err := s.open(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		t, err := s.answer(ctx, r, key, v, ifNoneMatch)
		if attempt == 0 && errors.Is(err, tile.ErrPreconditionFailed) {
			s.archives.Changed(v) // the image changed under the read: the new version
			continue
		}
		var refusal *iiif.Error
		if errors.As(err, &refusal) && !errors.Is(err, tile.ErrNotFound) {
			// A request the image cannot answer within the bounds: S3
			// answered every read.
			err = fmt.Errorf("%w: %w", tile.ErrRefused, err)
		}
		return t, err
	}
}

// open opens image id: an error matching tile.ErrNotFound when there is
// none, an *iiif.Error (501) when its pixels are not a picture.
func (s *Service) open(ctx context.Context, id string) (*archive.ImageVersion, error) {
	v, err := s.archives.Image(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := v.Pyramid.Pictured(); err != nil {
		return nil, iiif.Unsupported("%s: it is served as a map tileset, not as an IIIF image", err)
	}
	return v, nil
}

// answer makes key's answer from version v of the image.
func (s *Service) answer(ctx context.Context, r iiif.Route, key string, v *archive.ImageVersion, ifNoneMatch string) (*tile.Tile, error) {
	if ifNoneMatch != "" {
		cur, err := s.archives.Current(ctx, v)
		if err != nil {
			return nil, err
		}
		if archive.VersionOf(ifNoneMatch) == cur {
			return nil, tile.ErrNotModified
		}
	}
	img := describe(v.Pyramid)
	t := &tile.Tile{LastModified: v.LastModified}
	var err error
	switch r.Kind {
	case iiif.RouteInfo:
		t.Body, err = iiifinfo.Info(r.Version, placeholderID(r), img, s.cfg.Limits, iiifinfo.InfoOptions{LinkHeaders: true})
		t.ContentType, t.ETag = "application/json", tile.DerivedTag(v.ETag, "/info"+r.Version.String()+tileset.Tag)
	case iiif.RouteManifest:
		t.Body, err = iiifinfo.Manifest(iiifinfo.ManifestOptions{ID: tileset.PlaceholderBase + "/" + key,
			Label: r.ID, Service: placeholderID(r)}, img, s.cfg.Limits)
		t.ContentType, t.ETag = "application/json", tile.DerivedTag(v.ETag, "/manifest"+tileset.Tag)
	default:
		return s.image(ctx, r, key, v, img)
	}
	if err != nil {
		return nil, fmt.Errorf("images: %s: %w", key, err)
	}
	return t, nil
}

// image makes the answer of an image request key, in its canonical form.
func (s *Service) image(ctx context.Context, r iiif.Route, key string, v *archive.ImageVersion, img iiif.Image) (*tile.Tile, error) {
	req, err := iiif.Parse(r.Version, r.Params[0], r.Params[1], r.Params[2], r.Params[3])
	if err != nil {
		return nil, err
	}
	res, err := iiif.Resolve(req, img, s.cfg.Limits)
	if err != nil {
		return nil, err
	}
	if key != r.Dir()+res.Canonical {
		// Keys come from Key: only a canonical request has an answer.
		return nil, fmt.Errorf("images: %s is not a canonical request: %w", key, tile.ErrNotFound)
	}
	if err := s.refused.get(key, v.ETag); err != nil {
		return nil, err
	}
	plan, err := iiif.NewPlan(res, img)
	if err != nil {
		return nil, err
	}
	t := &tile.Tile{ContentType: res.Format.MediaType(), LastModified: v.LastModified,
		ETag: tile.DerivedTag(v.ETag, "/"+strings.ReplaceAll(res.Canonical, "/", "~"))}
	if m, ok := plan.Match(); ok && !m.Padded && v.Pyramid.Levels()[m.Level].JPEG {
		// The stored tile is the answer: its bytes, made whole.
		t.Body, err = v.Pyramid.StoredJPEG(ctx, m.Level, image.Pt(m.X, m.Y))
		if err == nil {
			s.stats.Stored.Add(1)
		}
		return t, err
	}
	src := &tiles{p: v.Pyramid, level: plan.Level, at: plan.TileList()}
	began := time.Now()
	t.Body, err = s.render.Render(ctx, res, plan, img, src)
	tile.AddPixels(ctx, time.Since(began)) // Server-Timing's pixels (tiles.Tile's reads included)
	var tooLarge *pixel.TooLargeError
	if errors.As(err, &tooLarge) && tooLarge.What == "encoded answer" {
		s.stats.Refused.Add(1)
		s.refused.put(key, v.ETag, err)
	}
	if err != nil {
		return nil, err
	}
	s.stats.Rendered.Add(1)
	return t, nil
}

// refusals remembers the answers refused once made (their encoding over
// the byte bound), for the version of the image they were made from, so
// that asking again, as a viewer or a flood does, makes nothing. A new
// version (another ETag) is tried again. At most maxRefusals are kept; one
// arriving past that replaces an arbitrary one.
type refusals struct {
	mu sync.Mutex
	m  map[string]refusal // by key
}

type refusal struct {
	etag string
	err  error
}

const maxRefusals = 1024

func (r *refusals) get(key, etag string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.m[key]; ok && f.etag == etag {
		return f.err
	}
	return nil
}

func (r *refusals) put(key, etag string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]refusal{}
	}
	if _, ok := r.m[key]; !ok && len(r.m) >= maxRefusals {
		for k := range r.m {
			delete(r.m, k)
			break
		}
	}
	r.m[key] = refusal{etag: etag, err: err}
}

// placeholderID is the image service's id before the HTTP layer renders
// it for the base URL of an answer.
func placeholderID(r iiif.Route) string {
	return tileset.PlaceholderBase + "/" + strings.TrimSuffix(r.Dir(), "/")
}

// describe is what the IIIF package needs of an image.
func describe(p formats.Pyramid) iiif.Image {
	gray, alpha := p.Bands()
	img := iiif.Image{Gray: gray, HasAlpha: alpha, JPEGTiles: true}
	for _, l := range p.Levels() {
		img.Levels = append(img.Levels, iiif.Level{Width: l.Width, Height: l.Height, TileWidth: l.TileWidth, TileHeight: l.TileHeight})
		img.JPEGTiles = img.JPEGTiles && l.JPEG
	}
	return img
}

// tiles is the TileSource of one answer: the stored tiles its plan covers,
// read together on the first call (one ranged read per run of adjacent
// tiles), each decoded when the pipeline asks for it, within its bound on
// decodes at once.
type tiles struct {
	p     formats.Pyramid
	level int
	at    []image.Point

	once   sync.Once
	decode func(i int) (image.Image, error)
	err    error
}

func (t *tiles) Tile(ctx context.Context, level, x, y int) (image.Image, error) {
	t.once.Do(func() { t.decode, t.err = t.p.ReadTiles(ctx, t.level, t.at) })
	if t.err != nil {
		return nil, t.err
	}
	if level != t.level {
		return nil, fmt.Errorf("images: tile of level %d, the plan reads level %d", level, t.level)
	}
	for i, p := range t.at {
		if p.X == x && p.Y == y {
			return t.decode(i)
		}
	}
	return nil, fmt.Errorf("images: tile %d,%d is not in the plan", x, y)
}
