// Package adminpurge adapts the purge pipeline (shared/purge) to the admin
// API's Purger, so that neither package speaks the other's types.
package adminpurge

import (
	"context"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/purge"
)

// Purger is p as an admin.Purger: the journal, then the CDN invalidation
// handed to the worker.
type Purger struct{ P *purge.Purger }

// Prefixes is what a purge of prefix covers: it and what it derives,
// coalesced (purge.PrefixRequest).
func (a Purger) Prefixes(prefix string) []string {
	return purge.PrefixRequest(prefix, "", "").Prefixes
}

// Purge records prefixes and carries them to the CDN.
func (a Purger) Purge(ctx context.Context, prefixes []string, batchID string) (admin.PurgeOutcome, error) {
	out, err := a.P.Purge(ctx, purge.Request{Prefixes: prefixes, Source: "admin", BatchID: batchID})
	res := admin.PurgeOutcome{Seq: out.Seq, CDNPaths: out.Paths}
	if out.HandedOff {
		res.Handed = out.Targets
	}
	return res, err
}
