package cdntest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
)

// TestApplyBeforeCompleted checks that with Options.Apply an invalidation is
// InProgress until Apply has succeeded, however long ago it was created, and
// Completed after.
func TestApplyBeforeCompleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		failures int // Apply calls that fail before one succeeds
	}{
		{"applied at once", 0},
		{"applied after two failures", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var mu sync.Mutex // guards calls and got
			calls := 0
			var got []string
			srv := cdntest.NewWithOptions(t, cdntest.Options{Apply: func(ctx context.Context, id string, paths []string) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= tc.failures {
					return errors.New("cache unreachable")
				}
				got = paths
				return nil
			}})
			c := srv.Client()
			ctx := context.Background()
			out, err := c.CreateInvalidation(ctx, &cloudfront.CreateInvalidationInput{
				DistributionId: aws.String("E1"),
				InvalidationBatch: &types.InvalidationBatch{
					CallerReference: aws.String("ref"),
					Paths:           &types.Paths{Quantity: aws.Int32(2), Items: []string{"/a/*", "/b.png"}},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			id := out.Invalidation.Id
			status := func() string {
				g, err := c.GetInvalidation(ctx, &cloudfront.GetInvalidationInput{DistributionId: aws.String("E1"), Id: id})
				if err != nil {
					t.Fatal(err)
				}
				return aws.ToString(g.Invalidation.Status)
			}
			// The clock has long passed CompleteAfter (0), but Apply has not run.
			if s := status(); s != "InProgress" {
				t.Fatalf("before Apply: got %v, want InProgress", s)
			}
			if u := srv.InProgress(); u != (cdntest.Usage{Wildcard: 1, Exact: 1}) {
				t.Fatalf("in progress before Apply: got %v, want {1 1}", u)
			}
			close(release)
			deadline := time.Now().Add(5 * time.Second)
			for status() != "Completed" {
				if time.Now().After(deadline) {
					t.Fatalf("not Completed 5s after Apply was released (%d calls)", calls)
				}
				time.Sleep(5 * time.Millisecond) // polling for completion, not ordering
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != tc.failures+1 {
				t.Errorf("Apply calls: got %v, want %v", calls, tc.failures+1)
			}
			if len(got) != 2 || got[0] != "/a/*" || got[1] != "/b.png" {
				t.Errorf("applied paths: got %v, want [/a/* /b.png]", got)
			}
			if n := len(srv.ApplyErrors()); n != tc.failures {
				t.Errorf("ApplyErrors: got %v, want %v", n, tc.failures)
			}
		})
	}
}
