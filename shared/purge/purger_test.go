package purge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

func TestPrefixRequestTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix            string
		prefixes, targets []string
	}{
		{"osm.pmtiles", []string{"osm.json", "osm.pmtiles", "osm/"}, []string{"osm.json*", "osm.pmtiles*", "osm/"}},
		{"osm/1", []string{"osm/1"}, []string{"osm/1*"}},
		{"osm/", []string{"osm.json", "osm/"}, []string{"osm.json*", "osm/"}},
		// osm.json is under osm., osm/ is not; nor are the IIIF answers of
		// an image osm.tif.
		{"osm.", []string{"iiif/2/osm/", "iiif/3/osm/", "osm.", "osm/"}, []string{"iiif/2/osm/", "iiif/3/osm/", "osm.*", "osm/"}},
		{"maps/a.tif", []string{"iiif/2/maps%2Fa/", "iiif/3/maps%2Fa/", "maps/a.tif"}, []string{"iiif/2/maps%2Fa/", "iiif/3/maps%2Fa/", "maps/a.tif*"}},
		{"", []string{""}, []string{""}},
		// A font purge reaches the stacks composed with the font: its font
		// directory, and a top-level one's TileJSON too.
		{"fonts/Noto Sans Regular/", []string{"fonts/"}, []string{"fonts/"}},
		{"fonts/Noto", []string{"fonts/"}, []string{"fonts/"}},
		{"fonts/", []string{"fonts.json", "fonts/"}, []string{"fonts.json*", "fonts/"}},
		{"osm/1/", []string{"osm/1/"}, []string{"osm/1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			t.Parallel()
			r := PrefixRequest(tt.prefix, "admin", "b")
			if !slices.Equal(r.Prefixes, tt.prefixes) || !slices.Equal(r.targets(), tt.targets) {
				t.Errorf("got prefixes %q, targets %q; want %q, %q", r.Prefixes, r.targets(), tt.prefixes, tt.targets)
			}
		})
	}
}

func TestDecodeInvalidation(t *testing.T) {
	t.Parallel()
	good, err := Invalidation{Targets: []string{"osm/", "osm.json*"}, BatchID: "admin:osm:1", Seq: 7, Source: "admin"}.Message()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kind, body string
		wantErr          string // "" decodes
	}{
		{"good", "invalidate", string(good), ""},
		{"other kind", "reindex", string(good), "kind"},
		{"not JSON", "invalidate", `{"tilesieve":`, "invalidation message"},
		{"no targets", "invalidate", `{"tilesieve":"invalidate","invalidation":{"batch_id":"b"}}`, "without targets"},
		{"no batch", "invalidate", `{"tilesieve":"invalidate","invalidation":{"targets":["a/"]}}`, "without a batch id"},
		{"bad target", "invalidate", `{"tilesieve":"invalidate","invalidation":{"targets":["../x"],"batch_id":"b"}}`, "target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv, err := DecodeInvalidation(tt.kind, []byte(tt.body))
			if tt.wantErr == "" {
				if err != nil || !slices.Equal(inv.Targets, []string{"osm/", "osm.json*"}) || inv.BatchID != "admin:osm:1" || inv.Seq != 7 {
					t.Errorf("got %+v, %v", inv, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "purge: ") {
				t.Errorf("got %v, want a purge error about %q", err, tt.wantErr)
			}
		})
	}
}

// handoffBatch is an SQS batch of handed-over invalidations (raw bodies), as
// the worker's queue delivers them, message ids "h-0", "h-1", ...
func handoffBatch(t *testing.T, bodies ...string) s3event.Batch {
	t.Helper()
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "h-" + string(rune('0'+i)), EventSource: "aws:sqs", Body: b})
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return decodeSQS(t, raw)
}

func encoded(t *testing.T, inv Invalidation) string {
	t.Helper()
	b, err := inv.Message()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWorkerAppliesHandoffs: the worker applies a handed-over invalidation
// after the settle delay (once per batch), records nothing in the journal
// for it (the tile function did), fails the message of a malformed one or
// of one the CDN refused, and ignores them where it has no CDN.
func TestWorkerAppliesHandoffs(t *testing.T) {
	t.Parallel()
	inv := Invalidation{Targets: []string{"osm.json*", "osm/"}, BatchID: "admin:osm/:1", Seq: 3, Source: "admin"}
	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		sl := newFakeSleep()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{settle: time.Minute, sleep: sl.Sleep})
		res := we.w.Process(context.Background(), handoffBatch(t, encoded(t, inv), `{"tilesieve":"invalidate"}`))
		if res.Err != nil || res.Invalidations != 1 || !slices.Equal(res.Failed, []string{"h-1"}) {
			t.Errorf("result %+v: want one applied, the malformed h-1 failed", res)
		}
		if len(sl.waits) != 1 || sl.waits[0] != time.Minute {
			t.Errorf("waits %v, want the settle delay once", sl.waits)
		}
		reqs := we.cf.Requests()
		if len(reqs) != 1 || !slices.Equal(reqs[0].Paths, []string{"/osm.json*", "/osm/*"}) {
			t.Errorf("CDN %+v, want one invalidation of /osm.json* and /osm/*", reqs)
		}
		if n := we.head(t); n != 0 {
			t.Errorf("journal entries %d, want none: the tile function recorded it", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
		we.cf.Fail(cdntest.BadPath)
		res := we.w.Process(context.Background(), handoffBatch(t, encoded(t, inv)))
		if res.HandoffErrs != 1 || !slices.Equal(res.Failed, []string{"h-0"}) {
			t.Errorf("result %+v: want h-0 failed, to come back", res)
		}
	})
	t.Run("no CDN", func(t *testing.T) {
		t.Parallel()
		s3e := s3localtest.Start(t, workerBucket)
		never := func(context.Context, time.Duration) error { t.Error("waited without a CDN"); return nil }
		p := NewPurger(journal.New(s3e.Client, workerBucket, workerJournal, journal.Options{}), PurgerConfig{SettleDelay: time.Hour, Sleep: never}, nil)
		w := NewWorker(WorkerConfig{Bucket: workerBucket, TilesPrefix: "tiles/"}, p, nil)
		res := w.Process(context.Background(), handoffBatch(t, encoded(t, inv)))
		if res.Ignored != 1 || len(res.Failed) != 0 || res.Invalidations != 0 {
			t.Errorf("result %+v: want it ignored, not failed", res)
		}
	})
}
