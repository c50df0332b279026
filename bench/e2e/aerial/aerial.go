// Package aerial draws a deterministic stand-in for an aerial photograph at
// about 10 m a pixel: fields of varied crops with furrows, woods with a
// canopy texture, hedgerows and roads along field edges, a river, and
// sensor noise. JPEG tiles cut from it are as large and as varied as real
// imagery's, not the few KB of a smooth gradient nor the size of pure noise,
// so a benchmark of imagery tiles moves realistic bytes. The same seed draws
// the same scene, pixel for pixel, on every machine.
package aerial

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
)

// fieldCell is the mean width, in pixels, of a field.
const fieldCell = 40.0

// Scene is one landscape, infinite in extent; At gives any pixel of it.
type Scene struct{ seed uint64 }

// New returns the scene of seed.
func New(seed uint64) *Scene { return &Scene{seed: seed} }

// cover is what a field grows; each has its colour and furrow depth.
type cover struct {
	r, g, b float64
	furrow  float64 // amplitude of the stripes a field's tillage leaves
	grain   float64 // amplitude of its fine texture
}

var covers = [...]cover{
	{78, 112, 52, 10, 6},   // young crop
	{104, 132, 60, 8, 5},   // grass
	{150, 124, 84, 14, 8},  // ploughed soil
	{186, 168, 104, 9, 5},  // ripe grain
	{60, 94, 44, 6, 10},    // dense crop
	{128, 112, 90, 4, 12},  // fallow
	{170, 176, 120, 10, 4}, // stubble
}

// At is the colour of pixel (x, y).
func (s *Scene) At(x, y int) (r, g, b uint8) {
	fx, fy := float64(x), float64(y)
	// Large-scale relief shades everything a little.
	relief := s.fbm(fx/700, fy/700, 3, 11)
	shade := 1 + 0.12*relief
	var cr, cg, cb float64
	woods := s.fbm(fx/260, fy/260, 4, 12)
	switch {
	case woods > 0.28:
		canopy := s.fbm(fx/2.2, fy/2.2, 2, 13) + 0.6*s.fbm(fx/7, fy/7, 2, 14)
		cr, cg, cb = 42+22*canopy, 68+30*canopy, 38+18*canopy
	default:
		cr, cg, cb = s.field(fx, fy)
	}
	// A river: where a meandering field crosses zero, a few pixels wide.
	if w := math.Abs(s.fbm(fx/900+3.7, fy/900-1.3, 3, 15)); w < 0.006 {
		cr, cg, cb = 46, 66, 82
	} else if w < 0.012 {
		cr, cg, cb = 0.6*cr+0.4*70, 0.6*cg+0.4*92, 0.6*cb+0.4*70 // its banks
	}
	n := (float64(s.hash(uint64(x), uint64(y), 16)&0xff) - 127.5) / 127.5
	cr, cg, cb = cr*shade+5*n, cg*shade+5*n, cb*shade+5*n
	return clamp(cr), clamp(cg), clamp(cb)
}

// field colours a pixel of open land: the field it lies in (a cell of a
// jittered grid, its edges warped by noise so they are not straight), its
// furrows, and the hedgerow or road along the field's edge.
func (s *Scene) field(fx, fy float64) (r, g, b float64) {
	wx := fx + 9*s.fbm(fx/60, fy/60, 2, 21)
	wy := fy + 9*s.fbm(fx/60+5.1, fy/60+2.3, 2, 22)
	cx, cy := math.Floor(wx/fieldCell), math.Floor(wy/fieldCell)
	d1, d2 := math.Inf(1), math.Inf(1)
	var id1, id2 uint64
	for j := -1.0; j <= 1; j++ {
		for i := -1.0; i <= 1; i++ {
			ix, iy := uint64(int64(cx+i)), uint64(int64(cy+j))
			h := s.hash(ix, iy, 23)
			px := (cx + i + 0.15 + 0.7*unit(h)) * fieldCell
			py := (cy + j + 0.15 + 0.7*unit(h>>21)) * fieldCell
			d := math.Hypot(wx-px, wy-py)
			switch {
			case d < d1:
				d2, id2 = d1, id1
				d1, id1 = d, h
			case d < d2:
				d2, id2 = d, h
			}
		}
	}
	c := covers[id1%uint64(len(covers))]
	angle := unit(id1>>7) * math.Pi
	period := 2.5 + 3*unit(id1>>13)
	stripe := math.Sin((fx*math.Cos(angle) + fy*math.Sin(angle)) * 2 * math.Pi / period)
	grain := s.fbm(fx/1.6, fy/1.6, 1, 24)
	tint := 10 * (unit(id1>>29) - 0.5)
	r = c.r + tint + c.furrow*stripe + c.grain*grain
	g = c.g + tint + c.furrow*stripe + c.grain*grain
	b = c.b + 0.5*tint + 0.8*c.furrow*stripe + c.grain*grain
	// The edge between two fields: a road on some, a hedgerow on others.
	if edge := (d2 - d1) / 2; edge < 1.3 {
		if (id1^id2)%5 == 0 {
			return 196, 190, 176
		}
		return 0.55 * r, 0.65 * g, 0.5 * b
	}
	return r, g, b
}

// fbm is fractal value noise at (x, y): octaves layers, each of twice the
// frequency and half the amplitude of the one before, in about [-1, 1].
func (s *Scene) fbm(x, y float64, octaves int, salt uint64) float64 {
	sum, amp, norm := 0.0, 1.0, 0.0
	for o := range octaves {
		sum += amp * s.value(x, y, salt+uint64(o)*101)
		norm += amp
		x, y, amp = x*2, y*2, amp/2
	}
	return sum / norm
}

// value is smooth value noise: random values on the integer lattice,
// interpolated with a smoothstep, in [-1, 1].
func (s *Scene) value(x, y float64, salt uint64) float64 {
	x0, y0 := math.Floor(x), math.Floor(y)
	tx, ty := smooth(x-x0), smooth(y-y0)
	ix, iy := uint64(int64(x0)), uint64(int64(y0))
	v := func(i, j uint64) float64 { return 2*unit(s.hash(ix+i, iy+j, salt)) - 1 }
	top := v(0, 0) + tx*(v(1, 0)-v(0, 0))
	bot := v(0, 1) + tx*(v(1, 1)-v(0, 1))
	return top + ty*(bot-top)
}

func smooth(t float64) float64 { return t * t * (3 - 2*t) }

// hash mixes a lattice point, a salt and the scene's seed (SplitMix64's
// finaliser).
func (s *Scene) hash(x, y, salt uint64) uint64 {
	h := s.seed ^ x*0x9e3779b97f4a7c15 ^ y*0xc2b2ae3d27d4eb4f ^ salt*0x165667b19e3779f9
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// unit maps the low 21 bits of h to [0, 1).
func unit(h uint64) float64 { return float64(h&(1<<21-1)) / (1 << 21) }

func clamp(v float64) uint8 { return uint8(max(0, min(255, math.Round(v)))) }

// WritePPM writes the width×height pixels at the scene's origin as a binary
// PPM (P6), which GDAL reads. Rows are drawn on every core, a band at a
// time, so the whole image is never held in memory.
func (s *Scene) WritePPM(w io.Writer, width, height int) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("aerial: image of %d×%d pixels", width, height)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := fmt.Fprintf(bw, "P6\n%d %d\n255\n", width, height); err != nil {
		return fmt.Errorf("aerial: %w", err)
	}
	const band = 64 // rows drawn together
	buf := make([]byte, band*width*3)
	workers := runtime.GOMAXPROCS(0)
	for y0 := 0; y0 < height; y0 += band {
		rows := min(band, height-y0)
		var wg sync.WaitGroup
		for k := range workers {
			wg.Go(func() {
				for r := k; r < rows; r += workers {
					row := buf[r*width*3 : (r+1)*width*3]
					for x := range width {
						row[3*x], row[3*x+1], row[3*x+2] = s.At(x, y0+r)
					}
				}
			})
		}
		wg.Wait()
		if _, err := bw.Write(buf[:rows*width*3]); err != nil {
			return fmt.Errorf("aerial: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("aerial: %w", err)
	}
	return nil
}
