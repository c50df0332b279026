package stack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/purge"
)

// TestAdminPurgeReachesTheWorker: off Lambda an admin purge takes the same
// path as on it: the tile function records it in the journal and hands the
// CDN invalidation to the stack's worker, which takes it through its Lambda
// handler as an SQS message (and, with no CDN here, has nothing to send).
func TestAdminPurgeReachesTheWorker(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards handed and errs
	var handed []purge.Invalidation
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{
		Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 1,
		OnHandoff: func(inv purge.Invalidation, err error) {
			mu.Lock()
			defer mu.Unlock()
			handed, errs = append(handed, inv), append(errs, err)
		},
	})

	req, err := http.NewRequest(http.MethodPost, st.URL+"/_tilesieve/purge?prefix="+demotiles.Tileset+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(admin.TokenHeader, stack.DefaultAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res admin.PurgeResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin purge: %d, %+v, %v", resp.StatusCode, res, err)
	}
	wantTargets := []string{demotiles.Tileset + ".json*", demotiles.Tileset + "/"}
	if !slices.Equal(res.CDNTargets, wantTargets) {
		t.Errorf("cdn_targets %q, want %q", res.CDNTargets, wantTargets)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handed) != 1 || errs[0] != nil || !slices.Equal(handed[0].Targets, wantTargets) || handed[0].Seq != res.JournalSeq {
		t.Errorf("handed to the worker %+v (errors %v), want one of %q after entry %d", handed, errs, wantTargets, res.JournalSeq)
	}
	snap, err := st.Worker.Journal.Read(ctx, "")
	if err != nil || snap.Seq != res.JournalSeq || !slices.Equal(snap.Entries[len(snap.Entries)-1].Prefixes, []string{demotiles.Tileset + ".json", demotiles.Tileset + "/"}) {
		t.Errorf("journal %+v, %v: want the admin entry last, the worker recording nothing again", snap.Entries, err)
	}
}
