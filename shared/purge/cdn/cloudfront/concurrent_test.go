package cloudfront_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cfapi "github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
)

// listBarrier holds every ListInvalidations answer until n of them have
// been answered by the server, so that n workers count the paths in progress at the same
// moment, before any of them creates an invalidation: the worst interleaving
// two concurrent workers (WorkerMaxConcurrency=2) can meet.
type listBarrier struct {
	next http.RoundTripper
	n    int

	mu      sync.Mutex // guards arrived
	arrived int
	all     chan struct{} // closed when n lists have arrived
}

func newListBarrier(n int) *listBarrier {
	return &listBarrier{next: http.DefaultTransport, n: n, all: make(chan struct{})}
}

func (b *listBarrier) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/invalidation") {
		return b.next.RoundTrip(r)
	}
	// The server answers first; the answer is held until the other worker's
	// list has been answered too, so both counted the same moment.
	resp, err := b.next.RoundTrip(r)
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-r.Context().Done():
		if resp != nil {
			resp.Body.Close()
		}
		return nil, r.Context().Err()
	}
	return resp, err
}

// client is a CloudFront client for srv whose requests go through rt.
func client(srv *cdntest.Server, rt http.RoundTripper) *cfapi.Client {
	return cfapi.New(cfapi.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:   &http.Client{Transport: rt},
	})
}

// TestTwoWorkersKeepTheBudget: two Invalidators (two concurrent workers)
// send coalesced batches of 10 wildcard paths each against one CloudFront
// stand-in, both counting the paths in progress (ListInvalidations) before
// either creates. At no moment are more than 15 wildcard paths in progress,
// and every batch is invalidated in the end.
//
// What holds the budget is CloudFront's own refusal, not the count: both
// workers see the same 15 free paths and both send, so the second create is
// refused with TooManyInvalidationsInProgress and retried after a backoff
// until the first invalidation completes. The stand-in refuses as
// CloudFront does; with it told to allow more (the second case), the same
// interleaving puts 20 wildcard paths in progress, which is the race the
// count alone leaves open.
func TestTwoWorkersKeepTheBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		serverLimit int // wildcard paths the stand-in lets be in progress
		wantPeak    int
		wantRefused bool
	}{
		{"CloudFront's limit", cdntest.MaxWildcardPaths, 10, true},
		{"no limit at the server: the count alone", 100, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			srv := cdntest.NewWithOptions(t, cdntest.Options{Now: clock.Now, CompleteAfter: 30 * time.Second, MaxWildcardPaths: tc.serverLimit})
			barrier := newListBarrier(2)
			sl := &sleeper{clock: clock}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			outcomes := make([]cdn.Outcome, 2)
			errs := make([]error, 2)
			for w := range 2 {
				inv := cloudfront.New(client(srv, barrier), cloudfront.Config{
					DistributionID: dist, Sleep: sl.Sleep, MaxAttempts: 20, BaseDelay: 5 * time.Second, MaxDelay: 10 * time.Second,
				}, nil)
				var targets []string
				for i := range 10 {
					targets = append(targets, fmt.Sprintf("w%d/d%d/", w, i))
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					outcomes[w], errs[w] = inv.InvalidateTargets(ctx, targets, fmt.Sprintf("batch-%d", w), truncate)
				}()
			}
			wg.Wait()
			for w := range 2 {
				if errs[w] != nil {
					t.Fatalf("worker %d: %v", w, errs[w])
				}
				if got := len(outcomes[w].Paths); got != 10 {
					t.Errorf("worker %d sent %d paths, want its 10", w, got)
				}
			}
			if got := srv.Invalidations(); got != 2 {
				t.Errorf("invalidations created %d, want 2", got)
			}
			peak := srv.Peak().Wildcard
			if tc.serverLimit == cdntest.MaxWildcardPaths && peak > cdn.MaxWildcardPathsInProgress {
				t.Errorf("peak wildcard paths in progress %d, want at most %d", peak, cdn.MaxWildcardPathsInProgress)
			}
			if peak != tc.wantPeak {
				t.Errorf("peak wildcard paths in progress: got %d, want %d", peak, tc.wantPeak)
			}
			if refused := srv.Refused() > 0; refused != tc.wantRefused {
				t.Errorf("creates refused for the limit: got %d, want refusals %v", srv.Refused(), tc.wantRefused)
			}
			t.Logf("peak %d wildcard paths in progress, %d creates refused, %d waits (%v on the clock)", peak, srv.Refused(), sl.waits(), sl.slept())
		})
	}
}
