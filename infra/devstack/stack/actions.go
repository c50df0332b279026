package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/shared/awsclient"
)

// ActionsPath is where the demo actions live. It is under the admin prefix,
// which no tile key can take, so the actions shadow no tile.
const ActionsPath = "/_tilesieve/devstack/"

// ActionHeader must be set on an action: a page on another origin cannot
// set it without a CORS preflight, which the actions do not answer.
const ActionHeader = "X-Tilesieve-Devstack"

// MaxOutage bounds one simulated S3 outage.
const MaxOutage = 5 * time.Minute

// outage makes the embedded S3 answer 503 to reads of tiles until a time, so
// copies past REVALIDATE_AFTER are served STALE (journal reads go on, so
// purges still reach the function).
type outage struct {
	until atomic.Int64 // unix nanoseconds; 0: no outage
}

func (o *outage) set(d time.Duration) time.Time {
	if d <= 0 {
		o.until.Store(0)
		return time.Time{}
	}
	t := time.Now().Add(d)
	o.until.Store(t.UnixNano())
	return t
}

func (o *outage) active() bool {
	u := o.until.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// matches selects the requests an outage fails: GET and HEAD of objects under
// the tiles prefix, addressed path-style as the embedded clients do.
func (o *outage) matches(bucket, prefix string) func(*http.Request) bool {
	p := "/" + bucket + "/" + prefix
	return func(r *http.Request) bool {
		return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
			strings.HasPrefix(r.URL.Path, p) && o.active()
	}
}

// withActions serves the demo actions in front of next:
//
//	POST /_tilesieve/devstack/fresh-memory        empty the memory tier, as a
//	     restarted function finds it, over the kept disk tier (HIT-DISK)
//	POST /_tilesieve/devstack/s3-outage?seconds=N S3 fails tile reads for N
//	     seconds (0 ends it): expired copies are served STALE
func (st *Stack) withActions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, ActionsPath)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if name != "fresh-memory" && (name != "s3-outage" || st.S3 == nil) {
			http.Error(w, "no such action", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get(ActionHeader) == "" {
			http.Error(w, ActionHeader+" header required", http.StatusForbidden)
			return
		}
		var res any
		switch name {
		case "fresh-memory":
			n, bytes := st.App.Memory.DeletePrefix("")
			st.log.Info("demo: fresh memory tier over the kept disk tier", "dropped", n, "bytes", bytes)
			res = map[string]any{"dropped_entries": n, "dropped_bytes": bytes}
		case "s3-outage":
			secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
			if err != nil || secs < 0 || time.Duration(secs)*time.Second > MaxOutage {
				http.Error(w, fmt.Sprintf("seconds: want 0 to %d", int(MaxOutage.Seconds())), http.StatusBadRequest)
				return
			}
			until := st.outage.set(time.Duration(secs) * time.Second)
			st.log.Info("demo: S3 outage for tile reads", "seconds", secs)
			res = map[string]any{"seconds": secs, "until": until}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
}

// actions are the viewer's buttons for the demo actions.
func (st *Stack) actions() []viewer.Action {
	a := []viewer.Action{{
		Label:  "Fresh memory tier",
		Path:   ActionsPath + "fresh-memory",
		Header: ActionHeader,
		Title:  "Empty the memory tier, as a restarted function finds it; the disk tier stays, so the next fetch is HIT-DISK",
	}}
	if st.S3 != nil {
		a = append(a, viewer.Action{
			Label:    "S3 outage (20 s)",
			Path:     ActionsPath + "s3-outage?seconds=20",
			Header:   ActionHeader,
			Title:    fmt.Sprintf("S3 fails tile reads for 20 s: copies older than REVALIDATE_AFTER (%s) are served STALE, uncached tiles fail", st.Tiles.RevalidateAfter),
			Duration: 20,
		})
	}
	return a
}

// checkAWS reads the SDK configuration the tile function will use and
// reports, on one line, what it lacks to reach an S3 of the environment:
// the bucket (TILES_BUCKET), the region, the credentials.
func checkAWS(ctx context.Context, bucket string, log *slog.Logger) (region string, err error) {
	cfg, err := awsclient.Load(ctx, awsclient.Settings{})
	if err != nil {
		return "", fmt.Errorf("-embedded=false: AWS configuration: %w", err)
	}
	var missing []string
	if strings.TrimSpace(bucket) == "" {
		missing = append(missing, "no bucket (TILES_BUCKET)")
	}
	var inc *awsclient.IncompleteError
	if err := awsclient.Check(ctx, cfg.Region, cfg.Credentials); errors.As(err, &inc) {
		if inc.Err != nil {
			// The SDK's own message lists every provider it tried; it helps a
			// debugging session, not a first run.
			log.Debug("AWS credentials", "err", inc.Err)
		}
		missing = append(missing, inc.Missing...)
	} else if err != nil {
		return "", fmt.Errorf("-embedded=false: %w", err)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("-embedded=false uses the S3 of the environment, but it has %s; set them, or run without -embedded=false for the embedded S3", joinAnd(missing))
	}
	return cfg.Region, nil
}

// joinAnd joins phrases as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(phrases []string) string {
	if n := len(phrases); n > 1 {
		return strings.Join(phrases[:n-1], ", ") + " and " + phrases[n-1]
	}
	return strings.Join(phrases, "")
}
