package stack_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
)

// TestCloseWaitsForBackgroundChecks: a journal check that a memory hit
// started beside its answer is still waiting for S3 when the stack is
// closed. Close lets it finish against a running S3 before it stops S3 and
// removes the disk tier's directory, so the check neither fails nor writes
// the journal position into a directory being removed (which made Close
// fail with "unlinkat …: directory not empty").
func TestCloseWaitsForBackgroundChecks(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{
		Env:         mapEnv(map[string]string{"SYNC_INTERVAL": "100ms", "SYNC_TIMEOUT": "20s"}), // the held check does not time out
		Embedded:    true,
		S3Addr:      "127.0.0.1:0",
		Addr:        "127.0.0.1:0",
		Seed:        true,
		SeedMaxZoom: 1,
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := st.Tiles.DiskDir
	if dir == "" {
		t.Fatal("the stack has no disk tier directory")
	}

	// Hold the next journal read (see below for how long).
	entered, release := make(chan struct{}), make(chan struct{})
	var enter sync.Once
	journal := "/" + st.Tiles.Bucket + "/" + st.Tiles.JournalPrefix
	st.S3.Faults().Add(s3local.Fault{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, journal)
		},
		Times: 1,
		Hold:  func() { enter.Do(func() { close(entered) }); <-release },
	})
	// Memory hits until one starts a check beside its answer (one is due
	// every SYNC_INTERVAL).
	tileURL := st.URL + "/" + st.Example
	for held := false; !held; {
		if a := get(t, tileURL); a.status != http.StatusOK {
			t.Fatalf("GET %s: %d", tileURL, a.status)
		}
		select {
		case <-entered:
			held = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	before := st.App.Follower.Stats()

	closed := make(chan error, 1)
	go func() { closed <- st.Close(ctx) }()
	// The held read is answered after a second, unless S3 stops before
	// that: a Close that stops S3 under a check lets the check go on
	// against a stopped S3 and a directory being removed.
	wait := time.After(time.Second)
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // leaves no connection for S3's stop to wait for
	for waiting := true; waiting; {
		select {
		case <-wait:
			waiting = false
		case <-time.After(5 * time.Millisecond):
			resp, err := probe.Get(st.S3URL + "/")
			if err != nil {
				t.Errorf("S3 stopped while a journal check was waiting for it (%v)", err)
				waiting = false
				break
			}
			resp.Body.Close()
		}
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}

	after := st.App.Follower.Stats()
	if !after.LastOK.After(before.LastOK) || after.Failures != before.Failures {
		t.Errorf("when Close returned the held check had not succeeded: before %+v, after %+v", before, after)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("disk tier directory after Close: %v, want it removed", err)
	}
	st.App.Drain() // nothing may log after this point either
	if s := logs.String(); s != "" {
		t.Errorf("warnings while closing:\n%s", s)
	}
}
