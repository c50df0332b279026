package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The IIIF images section's image: BigTIFFWidth×BigTIFFHeight RGB, tiled
// in 512-px JPEG tiles, with a pyramid.
const (
	BigTIFFWidth  = 25167
	BigTIFFHeight = 12483
	bigTIFFName   = "big-25167x12483-q85-512.tif"
)

// BigTIFF is the section's image file and how it was had.
type BigTIFF struct {
	Path      string        `json:"-"`
	Bytes     int64         `json:"bytes"`
	Generated time.Duration `json:"generated"` // how long writing it took, when it was written
	Reused    bool          `json:"reused"`    // found in the cache by this run
	Commands  []string      `json:"commands"`  // what writes it
}

// bigTIFFSteps are the vips commands that write the image into dir: Perlin
// noise at a third of the size (a smooth colour field per band, and fine
// texture over all three) scaled up 3x, so that its 512-px JPEG tiles at
// quality 85 weigh tens of KB, as scans do (pure noise would weigh several
// times that), then saved as users save theirs.
func bigTIFFSteps(dir string) [][]string {
	w, h := strconv.Itoa(BigTIFFWidth/3), strconv.Itoa(BigTIFFHeight/3)
	p := func(name string) string { return filepath.Join(dir, name) }
	return [][]string{
		{"perlin", p("r.v"), w, h, "--cell-size", "200", "--seed", "1"},
		{"perlin", p("g.v"), w, h, "--cell-size", "200", "--seed", "2"},
		{"perlin", p("b.v"), w, h, "--cell-size", "400", "--seed", "3"},
		{"perlin", p("fine.v"), w, h, "--cell-size", "6", "--seed", "4"},
		{"linear", p("fine.v"), p("texture.v"), "0.35", "0"},
		{"bandjoin", p("r.v") + " " + p("g.v") + " " + p("b.v"), p("rgb.v")},
		{"add", p("rgb.v"), p("texture.v"), p("sum.v")},
		{"linear", p("sum.v"), p("third.v"), "110 110 110", "128 120 110", "--uchar"},
		{"resize", p("third.v"), p("full.v"), "3"},
		{"tiffsave", p("full.v"), p("out.tif"), "--tile", "--pyramid", "--compression", "jpeg", "--Q", "85", "--tile-width", "512", "--tile-height", "512"},
	}
}

// EnsureBigTIFF returns the section's image from cacheDir, writing it
// there with vips first when it is not there yet (about 45 s and 2.5 GB of
// scratch space on the development machine, once).
func EnsureBigTIFF(ctx context.Context, cacheDir string) (BigTIFF, error) {
	path := filepath.Join(cacheDir, bigTIFFName)
	t := BigTIFF{Path: path}
	for _, s := range bigTIFFSteps("$TMP") {
		t.Commands = append(t.Commands, "vips "+strings.Join(s, " "))
	}
	if st, err := os.Stat(path); err == nil {
		t.Bytes, t.Reused = st.Size(), true
		if b, err := os.ReadFile(path + ".took"); err == nil {
			t.Generated, _ = time.ParseDuration(strings.TrimSpace(string(b)))
		}
		return t, nil
	}
	if _, err := exec.LookPath("vips"); err != nil {
		return t, fmt.Errorf("vips not found: run bench/e2e/install-tools.sh")
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return t, err
	}
	tmp, err := os.MkdirTemp(cacheDir, "bigtiff-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(tmp)
	began := time.Now()
	for _, s := range bigTIFFSteps(tmp) {
		if out, err := exec.CommandContext(ctx, "vips", s...).CombinedOutput(); err != nil {
			return t, fmt.Errorf("vips %s: %w\n%s", strings.Join(s, " "), err, out)
		}
	}
	if err := os.Rename(filepath.Join(tmp, "out.tif"), path); err != nil {
		return t, err
	}
	t.Generated = time.Since(began)
	if err := os.WriteFile(path+".took", []byte(t.Generated.Round(time.Second).String()+"\n"), 0o644); err != nil {
		return t, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return t, err
	}
	t.Bytes = st.Size()
	return t, nil
}
