// Package purge carries a purge from an S3 change to every tier that may hold
// the old bytes.
//
//   - Coalesce turns a batch of changed keys into few prefixes.
//   - Journal is the purge journal in the bucket: one head object holding the
//     recent entries, numbered by a rising sequence and written by
//     compare-and-swap (conditional PUTs), so concurrent writers never lose
//     each other's entries; it refuses to write to a bucket that does not
//     honour the conditions.
//   - Follower keeps one function instance in step with the journal: at most
//     one cheap check per interval, riding on requests.
//   - Worker is the logic of the sync worker: decode the event, coalesce,
//     append one journal entry, invalidate the CDN.
package purge
