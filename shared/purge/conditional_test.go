package purge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
)

// stores are the two kinds of S3 the journal may be deployed against.
var stores = []struct {
	name   string
	ignore bool // the store accepts If-Match / If-None-Match on PUT and ignores them
}{
	{"honouring", false},
	{"ignoring", true},
}

// TestWorkerConcurrentNoSilentLoss: two sync workers (two processes) handle
// SQS batches at once. Every batch either lands in the journal or has its
// messages reported failed, so that SQS delivers them again and, after its
// retries, to the dead-letter queue.
func TestWorkerConcurrentNoSilentLoss(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ep := s3localtest.StartConfig(t, s3local.Config{Buckets: []string{workerBucket}, IgnoreWriteConditions: st.ignore})
			const workers, batches = 2, 15
			var wg sync.WaitGroup
			var mu sync.Mutex // guards failed and errs
			failed := map[string]bool{}
			var errs []error
			var logs syncbuf.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			for w := range workers {
				j := journal.New(ep.Client, workerBucket, workerJournal, journal.Options{Logger: log})
				wk := testWorker{NewWorker(WorkerConfig{Bucket: workerBucket, TilesPrefix: "tiles/"}, NewPurger(j, PurgerConfig{}, log), log)}
				wg.Go(func() {
					for b := range batches {
						seq := w*batches + b
						key := fmt.Sprintf("w%d/%d/0/0.png", w, b)
						out, err := wk.Handle(context.Background(), sqsBatch(t, "ObjectCreated:Put", []string{key}, seq))
						if err != nil {
							t.Error(err)
							return
						}
						ids := failedIDs(t, out)
						mu.Lock()
						for _, id := range ids {
							failed[id] = true
						}
						if len(ids) != 0 {
							errs = append(errs, fmt.Errorf("batch %d failed", seq))
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			head, err := journal.New(ep.Client, workerBucket, workerJournal, journal.Options{}).Read(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			inHead := map[string]bool{}
			for _, en := range head.Entries {
				for _, p := range en.Prefixes {
					inHead[p] = true
				}
			}
			silent, landed := 0, 0
			for w := range workers {
				for b := range batches {
					seq := w*batches + b
					id, key := fmt.Sprintf("m-%07d", seq), fmt.Sprintf("w%d/%d/0/0.png", w, b)
					switch {
					case inHead[key]:
						landed++
					case !failed[id]:
						silent++
					}
				}
			}
			if silent != 0 {
				t.Errorf("%d of %d batches reported handled and are not in the journal", silent, workers*batches)
			}
			if st.ignore && landed != 0 || !st.ignore && landed != workers*batches {
				t.Errorf("got %d batches in the journal, %d failed; want %d in it", landed, len(errs), map[bool]int{false: workers * batches}[st.ignore])
			}
			// The operator is told why, naming the missing S3 feature.
			if got := strings.Contains(logs.String(), "does not honour conditional writes"); got != st.ignore {
				t.Errorf("log names the missing feature: got %v, want %v; log:\n%s", got, st.ignore, logs.String())
			}
		})
	}
}
