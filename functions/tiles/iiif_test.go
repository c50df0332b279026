package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
)

// TestBufferedIIIF: the BUFFERED adapter serves an IIIF image like a tile:
// info.json named by the host the function URL was called at, and a stored
// tile whose memory hit is its payload prepared as it entered the memory
// tier (a holeReader), with the bytes of the miss.
func TestBufferedIIIF(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	s3localtest.Put(t, s3e.Client, "tiles", "tiles/books/p1.tif", imagetest.Pyramid(t, 700, 500, "120"), "image/tiff", "")
	fn := newTileFunction(t, s3e.Server, s3e.URL)
	r := fn.invoke(withPath(t, fixtures.Read(t, "url-get-tile.json"), "/iiif/3/books%2Fp1/info.json"))
	var info struct {
		ID    string `json:"id"`
		Width int    `json:"width"`
	}
	if err := json.Unmarshal(decodeBody(t, r), &info); r.StatusCode != 200 || err != nil || info.Width != 700 || !strings.HasSuffix(info.ID, "/iiif/3/books%2Fp1") {
		t.Fatalf("info.json: %d %+v %v", r.StatusCode, info, err)
	}
	ev := withPath(t, fixtures.Read(t, "url-get-tile.json"), "/iiif/3/books%2Fp1/0,0,256,256/256,256/0/default.jpg")
	miss := fn.invoke(ev)
	if miss.StatusCode != 200 || miss.Headers["X-Cache"] != "MISS" {
		t.Fatalf("miss: %d %v", miss.StatusCode, miss.Headers)
	}
	var uev urlEvent
	if !decodeEvent(ev, &uev) {
		t.Fatal("event does not decode")
	}
	b := &buffered{srv: fn.app.Server, next: fn.app.Handler, log: slog.New(slog.DiscardHandler)}
	out, err := b.Handle(context.Background(), &uev)
	hr, ok := out.(*holeReader)
	if !ok || err != nil {
		t.Fatalf("memory hit: %T %v, want the prepared payload", out, err)
	}
	hr.Close() // as the runtime does once it has sent the payload
	hit := fn.invoke(ev)
	if hit.Headers["X-Cache"] != "HIT-MEMORY" || string(decodeBody(t, hit)) != string(decodeBody(t, miss)) {
		t.Errorf("hit: %v, %d bytes; want the miss's %d bytes", hit.Headers["X-Cache"], len(decodeBody(t, hit)), len(decodeBody(t, miss)))
	}
}

// TestBufferedIIIFAnswerPastThePayload: on Lambda in BUFFERED mode an IIIF
// answer is made within what a buffered payload carries: a PNG of noise
// whose bytes would pass it is refused by the image service with 501 and
// its reason (a valid request the server cannot send), not made, cached
// and then refused by the adapter with 502.
func TestBufferedIIIFAnswerPastThePayload(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	s3localtest.Put(t, s3e.Client, "tiles", "tiles/noise.tif", imagetest.Pyramid(t, 2000, 1500, "128"), "image/tiff", "")
	fn := newTileFunction(t, s3e.Server, s3e.URL)
	r := fn.invoke(withPath(t, fixtures.Read(t, "url-get-tile.json"), "/iiif/3/noise/full/max/0/default.png"))
	if b := string(decodeBody(t, r)); r.StatusCode != 501 || !strings.Contains(b, "ask for a smaller size or for jpg") {
		t.Fatalf("got %d %q, want 501 with the reason", r.StatusCode, b)
	}
	r = fn.invoke(withPath(t, fixtures.Read(t, "url-get-tile.json"), "/iiif/3/noise/full/max/0/default.jpg"))
	if r.StatusCode != 200 {
		t.Fatalf("the JPEG: got %d, want 200", r.StatusCode)
	}
}
