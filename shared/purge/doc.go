// Package purge carries a purge from its source (an S3 change, an admin
// request) to every tier that may hold the old bytes: the instances' memory
// and disk tiers, through the journal, and the CDN.
//
//   - The journal (package journal) records each purge as one numbered
//     entry, and a follower (package follower) keeps each function instance
//     in step with it.
//   - Purger is the one purge pipeline, the same for every source: one
//     journal entry, then, after the settle delay that lets every instance
//     apply it, a CDN invalidation within the CDN's budget of paths in
//     progress, with the names a change derives (an archive's tileset and
//     TileJSON). The tile function's Purger hands the CDN stage to the
//     worker (Handoff), so only the worker talks to the CDN.
//   - Coalesce turns a batch of changed keys into few prefixes, and shrinks
//     them further when the CDN's budget is short (CoalesceConfig.Shrink).
//   - Worker is the sync worker's logic over decoded batches (s3event):
//     coalesce the changed tile keys, purge them through the Purger, and
//     apply the invalidations the tile function handed over. The Lambda
//     shapes (SQS responses) are the worker command's (worker/app), not
//     this package's.
package purge
