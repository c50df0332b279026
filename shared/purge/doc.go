// Package purge carries a purge from its source (an S3 change, an admin
// request) to every tier that may hold the old bytes, in one sequence that
// every source takes: record the purge as one journal entry (package
// journal), which every function instance applies to its memory and disk
// tiers (package follower); wait the settle delay that lets every instance
// apply it; then invalidate the CDN within its budget of paths in progress
// (package cdn), or hand that to the sync worker, so that only the worker
// talks to the CDN.
//
//   - Purger runs the sequence: Purge for the admin API, with the names a
//     prefix derives (an archive's tileset and TileJSON); a journal error
//     leaves the CDN alone, and the CDN is never invalidated before the
//     settle delay has passed since the entry was recorded.
//   - Worker is the sync worker's logic over decoded batches (s3event):
//     coalesce the changed tile keys, run the sequence for them and for the
//     invalidations the tile function handed over, with one settle delay,
//     and report which SQS messages failed. Handling is idempotent: a
//     redelivered batch appends another, harmless entry and reuses its CDN
//     caller reference. The Lambda shapes are the worker command's
//     (worker/app), not this package's.
//   - Coalesce turns a batch of changed keys into few prefixes, and shrinks
//     them further when the CDN's budget is short (CoalesceConfig.Shrink).
package purge
