package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// Invalidation is the CDN stage of a purge: what the Purger invalidates
// after the settle delay, and what the tile function hands to the worker.
type Invalidation struct {
	// Targets are the CDN targets: directories, single keys, and open
	// prefixes marked by a trailing "*" (cdn.Paths).
	Targets []string `json:"targets"`
	BatchID string   `json:"batch_id"`
	// Seq is the journal entry the invalidation follows, for the logs.
	Seq    uint64 `json:"seq,omitempty"`
	Source string `json:"source,omitempty"`
}

// Handoff passes a CDN invalidation to the sync worker, which applies it
// after the settle delay within the CDN's budget. The tile function hands
// its admin purges over this way so that only the worker talks to the CDN.
type Handoff interface {
	Hand(ctx context.Context, inv Invalidation) error
}

// messageKind marks a handed-off invalidation among the S3 notifications on
// the worker's queue (s3event.Message.Kind).
const messageKind = "invalidate"

// message is the body of a handed-off invalidation on the worker's queue.
type message struct {
	Tilesieve    string       `json:"tilesieve"` // messageKind
	Invalidation Invalidation `json:"invalidation"`
}

// Message encodes inv as the body of a message to the worker's queue, which
// the worker's event decoder (s3event) tells apart from S3 notifications.
func (inv Invalidation) Message() ([]byte, error) {
	return json.Marshal(message{Tilesieve: messageKind, Invalidation: inv})
}

// DecodeInvalidation decodes a handed-off invalidation (Invalidation.Message)
// and checks it: it comes from a queue, so it is outside input.
func DecodeInvalidation(kind string, body []byte) (Invalidation, error) {
	if kind != messageKind {
		return Invalidation{}, fmt.Errorf("purge: message kind %q is not %q", kind, messageKind)
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return Invalidation{}, fmt.Errorf("purge: invalidation message: %w", err)
	}
	inv := m.Invalidation
	if len(inv.Targets) == 0 {
		return inv, errors.New("purge: invalidation message without targets")
	}
	if inv.BatchID == "" {
		return inv, errors.New("purge: invalidation message without a batch id")
	}
	for _, t := range inv.Targets {
		if err := tile.ValidatePrefix(strings.TrimSuffix(t, "*")); err != nil {
			return inv, fmt.Errorf("purge: invalidation target %q: %w", t, err)
		}
	}
	return inv, nil
}
