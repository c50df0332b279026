package follower

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// replaceHead rewrites the head as a writer that lost a compare-and-swap
// on a store ignoring conditions does: the same journal, its own entry at
// a number already handed out (the last, or the one before it when
// extend), and optionally one more entry after it.
func (fe *followerEnv) replaceHead(t *testing.T, at uint64, prefix string, extend bool) {
	t.Helper()
	s := read(t, fe.w)
	for i := range s.Entries {
		if s.Entries[i].Seq == at {
			s.Entries[i].Prefixes = []string{prefix}
		}
	}
	s.Entries = s.Entries[:len(s.Entries)-int(s.Seq-at)]
	s.Seq = at
	if extend {
		s.Seq++
		s.Entries = append(s.Entries, journal.Entry{Seq: s.Seq, Prefixes: []string{"after/"}, Time: fe.clock.Now()})
	}
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	s3localtest.Put(t, fe.api, testBucket, fe.w.HeadKey(), body, "application/json", "")
}

// TestFollowerReplacedEntry: a follower that finds a different entry at a
// number it applied has missed that entry's purge, and whatever else the
// overwrite lost: it drops both tiers, whether the head still ends at that
// number or has moved on. The same entry written again is not a change.
func TestFollowerReplacedEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prefix string // the entry now at seq 3; "mine/" is the one applied
		extend bool
		want   []string
	}{
		{"replaced at the head", "theirs/", false, []string{"all"}},
		{"replaced, head moved on", "theirs/", true, []string{"all"}},
		{"rewritten as it was", "mine/", false, nil},
		{"rewritten as it was, head moved on", "mine/", true, []string{"prefix after/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fe := newFollowerEnv(t, Config{})
			ctx := context.Background()
			if err := fe.f.Start(ctx); err != nil {
				t.Fatal(err)
			}
			fe.append(t, "a/")
			fe.append(t, "b/")
			fe.append(t, "mine/")
			fe.syncAfter(ctx, time.Second)
			if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/", "prefix b/", "prefix mine/"}) {
				t.Fatalf("before: got %q", got)
			}
			fe.replaceHead(t, 3, tc.prefix, tc.extend)
			fe.syncAfter(ctx, time.Second)
			if got := fe.rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			// Once dropped, the new head is the position: nothing more.
			fe.clock.Advance(time.Second)
			if err := fe.f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fe.rec.take(); len(got) != 0 {
				t.Errorf("next check: got %q, want nothing", got)
			}
		})
	}
}

// TestFollowerRestartReplacedEntry: the entry's digest is saved with the
// disk tier's position, so a process restarted over a kept disk tier sees
// an entry replaced while it was down; a position saved without a digest
// (by an older version) cannot vouch for the entry it names, and the kept
// disk tier is dropped.
func TestFollowerRestartReplacedEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replace bool // the head is rewritten with another entry at 2 while the process is down
		old     bool // the saved position has no digest
		want    []string
	}{
		{"kept", false, false, []string{"prefix missed/"}},
		{"replaced while down", true, false, []string{"all"}},
		{"position without digest", false, true, []string{"all"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fe := newFollowerEnv(t, Config{})
			pos := tempPosition(t)
			ctx := context.Background()
			fe.startAt(t, pos)
			fe.append(t, "a/")
			fe.append(t, "mine/")
			fe.syncAfter(ctx, time.Second)
			fe.rec.take()
			saved, ok, err := pos.Load()
			if err != nil || !ok || saved.Seq != 2 || saved.Entry != journal.EntryDigest(read(t, fe.w).Entries[1]) {
				t.Fatalf("saved position %+v %v %v, want seq 2 with the digest of its entry", saved, ok, err)
			}
			if tc.old {
				if err := os.WriteFile(pos.Path, fmt.Appendf(nil, `{"journal":%q,"seq":2}`, saved.Journal), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.replace {
				fe.replaceHead(t, 2, "theirs/", false)
			}
			fe.append(t, "missed/")
			fe.startAt(t, pos)
			if got := fe.rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("restart: got %q, want %q", got, tc.want)
			}
			if p, _, _ := pos.Load(); p.Seq != 3 || p.Entry == "" {
				t.Errorf("saved position after restart: got %+v, want seq 3 with a digest", p)
			}
		})
	}
}
