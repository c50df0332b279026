package upload_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/infra/internal/imagetools"
	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestTIFFValidated: a TIFF is uploaded only when the tile function serves
// it: tiled, pyramidal and, when georeferenced, in a CRS the map view
// serves. Each refusal is one line that says what to run, and nothing is
// sent.
func TestTIFFValidated(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string) string // writes the file, returns its path
		want []string                              // in the refusal; none: uploaded
	}{
		{"strips", func(t *testing.T, dir string) string {
			return imagetools.StripTIFF(t, dir, "strips.tif", 600, 400)
		}, []string{"strips.tif: not servable: tiff: not tiled: the 600x400 image is stored in strips", "vips tiffsave in out.tif --tile --pyramid", "gdal_translate -of COG"}},
		{"tiled, no levels", func(t *testing.T, dir string) string {
			imagetools.Run(t, dir, "vips", "tiffsave", imagetools.Noise(t, dir, "src.v", 1500, 1100), "flat.tif", "--tile", "--compression", "jpeg")
			return filepath.Join(dir, "flat.tif")
		}, []string{"flat.tif: not servable: tiff: not pyramidal: the 1500x1100 image's smallest level is 1500x1100", "vips tiffsave in out.tif --tile --pyramid"}},
		{"pyramidal", func(t *testing.T, dir string) string {
			return imagetools.Pyramid(t, dir, "pyramid.tif", 1500, 1100)
		}, nil},
		{"COG in Lambert-93", func(t *testing.T, dir string) string {
			return imagetools.COG(t, dir, "lambert.tif", "EPSG:2154", []string{"650000", "6863000", "651500", "6861900"}, 1500, 1100)
		}, []string{"lambert.tif: georeferenced, but not servable as map tiles", "EPSG:2154 is not served", "gdalwarp -t_srs EPSG:3857 -of COG in.tif out.tif"}},
		{"COG in web mercator", func(t *testing.T, dir string) string {
			return imagetools.COG(t, dir, "mercator.tiff", "EPSG:3857", []string{"260000", "6251500", "261500", "6250400"}, 1500, 1100)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := c.make(t, dir)
			ep := s3localtest.Start(t, bucket)
			dst := upload.Destination{Bucket: bucket, Prefix: "tiles/maps/", Name: "scan"}
			rep, err := upload.Run(context.Background(), ep.Client, src, dst, upload.Options{})
			if c.want == nil {
				key := "tiles/maps/scan" + filepath.Ext(src)
				if err != nil || rep.Uploaded != 1 {
					t.Fatalf("got %+v, %v; want %s uploaded", rep, err, key)
				}
				if o := get(t, ep.Client, key); o.ctype != "image/tiff" || o.cenc != "" {
					t.Errorf("%s: got Content-Type %q, Content-Encoding %q, want image/tiff and none", key, o.ctype, o.cenc)
				}
				return
			}
			if !errors.Is(err, upload.ErrSource) || rep.Uploaded+rep.Skipped+rep.Failed != 0 {
				t.Fatalf("got %+v, %v; want an ErrSource before anything is counted", rep, err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || strings.Count(msg, "upload: ") != 1 {
				t.Errorf("refusal %q: want one line, prefixed once", msg)
			}
			if ks := keys(t, ep.Client); len(ks) != 0 {
				t.Errorf("refused, yet the bucket holds %v", ks)
			}
		})
	}
}

// TestTIFFNotConverted: -to-pmtiles does not apply to a TIFF, which is
// served as it is stored; the refusal says so before anything is read.
func TestTIFFNotConverted(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "photo.tif")
	if err := os.WriteFile(src, []byte("II*\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	ep := s3localtest.Start(t, bucket)
	_, err := upload.Run(context.Background(), ep.Client, src, upload.Destination{Bucket: bucket, Name: "photo"}, upload.Options{ToPMTiles: true})
	if !errors.Is(err, upload.ErrSource) || !strings.Contains(err.Error(), "upload it without -to-pmtiles") {
		t.Errorf("got %v, want an ErrSource naming -to-pmtiles", err)
	}
}

// TestTIFFNotATile: a .tif inside a tile directory is no z/x/y tile.
func TestTIFFNotATile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for rel, b := range map[string]string{"0/0/0.png": "\x89PNG", "1/0/0.tif": "II*\x00", "1/0/1.TIFF": "MM\x00*"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ep := s3localtest.Start(t, bucket)
	rep := run(t, ep.Client, dir, upload.Destination{Bucket: bucket, Name: "city"}, upload.Options{})
	if rep.Uploaded != 1 || rep.Skips[upload.SkipNotTile] != 2 {
		t.Errorf("got %+v, want the PNG uploaded and both TIFFs skipped as no tiles", rep)
	}
}
