package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

// TestSectionsSmoke runs sections at tiny sizes when E2E_SMOKE is set (the
// full runs belong to cmd/e2ebench).
func TestSectionsSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") == "" {
		t.Skip("set E2E_SMOKE=1")
	}
	pool := tileset.NewPool(4, 128, 5_000, 10_000, 1)
	r, err := RunIIIF(context.Background(), pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		t.Logf("%+v", row)
	}
	t.Logf("%+v", r.Targets)
}

func TestStorageSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "storage" {
		t.Skip("set E2E_SMOKE=storage")
	}
	pool := tileset.NewPool(4, 128, 5_000, 10_000, 1)
	r, err := RunStorage(context.Background(), pool, StorageParams{RepoRoot: "../..", BenchDir: "..", MaxZoom: 3,
		ABN: 1000, ABC: 20, WrkDur: 1 * time.Second, WrkConns: 20, WrkThread: 2, MemBudget: 64 << 20, ABPath: "/osm/3/2/2.jpg", Rounds: 2})
	for _, row := range r.Rows {
		t.Logf("%+v", row)
	}
	for _, m := range r.Memory {
		t.Logf("%+v", m)
	}
	t.Logf("%+v %+v", r.Targets, r.MemTargets)
	if err != nil {
		t.Fatal(err)
	}
}

func TestPurgeStagingSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "purge" {
		t.Skip("set E2E_SMOKE=purge (make test does)")
	}
	r, err := RunPurge(context.Background(), 4, 250*time.Millisecond, 20*time.Millisecond, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	s, err := RunStaging(context.Background(), 300, 20<<20, []time.Duration{0, 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
}

func TestPurgeScenariosSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "purge" {
		t.Skip("set E2E_SMOKE=purge (make test does)")
	}
	ctx := context.Background()
	c, err := RunCheckCost(ctx, 100*time.Millisecond, []int{1, 10, 100}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		t.Logf("backlog %d fresh %d %+v", r.Backlog, r.Fresh, r.Reps)
	}
	for _, sp := range []PurgeSpec{
		{Name: "backlog", Instances: 2, SyncInterval: 250 * time.Millisecond, Poll: 20 * time.Millisecond, Trials: 2, Backlog: 100},
		{Name: "slow", Instances: 2, SyncInterval: 250 * time.Millisecond, SyncTimeout: 200 * time.Millisecond, Poll: 20 * time.Millisecond, Trials: 3, HeadDelay: 300 * time.Millisecond},
	} {
		r, err := RunPurgeSpec(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: all %+v late %d reads %d s %.1f s3 %+v worker %+v appends %d", r.Scenario, r.AllFresh, r.Late, r.Reads, r.Seconds, r.S3, r.WorkerS3, r.Appends)
	}
}
