package viewer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  viewer.Config
		ok   bool
	}{
		{"demo", viewer.Config{Template: "/demo/{z}/{x}/{y}.png", MaxZoom: 4, Zoom: 2}, true},
		{"no placeholders", viewer.Config{Template: "/demo/tile.png", MaxZoom: 4}, false},
		{"relative", viewer.Config{Template: "demo/{z}/{x}/{y}.png", MaxZoom: 4}, false},
		{"zoom outside", viewer.Config{Template: "/{z}/{x}/{y}", MaxZoom: 4, Zoom: 5}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestMountServesThePageAtRootOnly(t *testing.T) {
	t.Parallel()
	page, err := viewer.Handler(viewer.Config{
		Template: "/demo/{z}/{x}/{y}.png", MaxZoom: 4, Zoom: 2,
		Hints: []viewer.Hint{{Label: "Upload", Command: "aws s3 cp a.png s3://tiles/x </script>"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tiles := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tile "+r.URL.Path) })
	srv := httptest.NewServer(viewer.Mount(page, tiles))
	defer srv.Close()

	for _, tc := range []struct{ path, want string }{
		{"/", "<!doctype html>"},
		{"/demo/0/0/0.png", "tile /demo/0/0/0.png"},
		{"/index.html", "tile /index.html"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), tc.want) {
			t.Errorf("GET %s: got %.40q, want %q…", tc.path, b, tc.want)
		}
		if tc.path == "/" {
			body := string(b)
			if !strings.Contains(body, `"Template":"/demo/{z}/{x}/{y}.png"`) || !strings.Contains(body, `"MaxZoom":4`) {
				t.Errorf("the page does not carry its configuration")
			}
			if strings.Contains(body, "x </script>") {
				t.Errorf("a hint was not escaped")
			}
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: got %d, want 405", resp.StatusCode)
	}
}
