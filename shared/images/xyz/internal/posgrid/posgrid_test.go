package posgrid_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz/internal/posgrid"
)

func TestBuild(t *testing.T) {
	t.Parallel()
	const tol = 1.0 / 64
	tests := []struct {
		name     string
		w, h     int
		pos      func(i, j int) (float64, float64)
		wantStep int
	}{
		{"affine", 256, 256, func(i, j int) (float64, float64) { return 2*float64(i) + 3, 0.5 - float64(j) + 0.1*float64(i) }, 64},
		// Error a·(s/2)² at an edge's midpoint: within 1/64 from s = 4.
		{"quadratic", 256, 200, func(i, j int) (float64, float64) { return float64(i*i) / 1000, float64(j) }, 4},
		// z²: harmonic, so the errors cancel at cells' centres; the edges show them.
		{"conformal", 256, 256, func(i, j int) (float64, float64) {
			x, y := float64(i), float64(j)
			return (x*x - y*y) / 1000, 2 * x * y / 1000
		}, 4},
		{"one pixel", 1, 1, func(i, j int) (float64, float64) { return 7, 8 }, 64},
		{"thin", 300, 2, func(i, j int) (float64, float64) { return float64(i) / 3, float64(j) }, 64},
		{"no position beyond 100", 256, 64, func(i, j int) (float64, float64) {
			if i > 100 {
				return math.NaN(), math.NaN()
			}
			return float64(i), float64(j)
		}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := posgrid.Build(tt.w, tt.h, 64, tol, tt.pos)
			if g.Step() != tt.wantStep {
				t.Errorf("got step %d, want %d", g.Step(), tt.wantStep)
			}
			us, vs := make([]float64, tt.w), make([]float64, tt.w)
			worst := 0.0
			for j := range tt.h {
				g.Row(j, us, vs)
				for i := range tt.w {
					u, v := tt.pos(i, j)
					if d := math.Hypot(us[i]-u, vs[i]-v); d > worst {
						worst = d
					}
				}
			}
			if worst > tol {
				t.Errorf("got worst error %.3g, want ≤ %.3g", worst, tol)
			}
		})
	}
}

func ExampleBuild() {
	g := posgrid.Build(256, 256, 64, 0.01, func(i, j int) (float64, float64) {
		return float64(i) / 2, float64(j*j) / 5000
	})
	us, vs := make([]float64, 256), make([]float64, 256)
	g.Row(100, us, vs)
	fmt.Printf("step %d, pixel (10, 100) at %.2f, %.2f\n", g.Step(), us[10], vs[10])
	// Output: step 8, pixel (10, 100) at 5.00, 2.00
}
