package s3event

import "strings"

// CompareSequencer orders two sequencer values of the same object key: -1 if
// a is older than b, 0 if equal, +1 if newer. Sequencers are hexadecimal
// strings of varying length; as AWS documents, the shorter one is left-padded
// with zeros before a lexicographic comparison. Case is ignored. Values that
// are not hex (only hand-made events have them) still get a consistent order.
// An empty sequencer is older than any other.
func CompareSequencer(a, b string) int {
	if a == "" || b == "" {
		switch {
		case a == b:
			return 0
		case a == "":
			return -1
		default:
			return 1
		}
	}
	a, b = strings.ToUpper(a), strings.ToUpper(b)
	if n := len(b) - len(a); n > 0 {
		a = strings.Repeat("0", n) + a
	} else if n < 0 {
		b = strings.Repeat("0", -n) + b
	}
	return strings.Compare(a, b)
}

// Latest keeps, for each bucket and key, only the newest change by
// sequencer; with equal sequencers (a redelivered event) the first one seen
// stays. The result keeps the input order of the changes it keeps. dropped
// counts the stale duplicates left out.
func Latest(changes []Change) (latest []Change, dropped int) {
	type id struct{ bucket, key string }
	best := make(map[id]int, len(changes)) // index into changes of the newest so far
	for i, c := range changes {
		k := id{c.Bucket, c.Key}
		j, seen := best[k]
		if !seen || CompareSequencer(c.Sequencer, changes[j].Sequencer) > 0 {
			best[k] = i
		}
	}
	latest = make([]Change, 0, len(best))
	for i, c := range changes {
		if best[id{c.Bucket, c.Key}] == i {
			latest = append(latest, c)
		}
	}
	return latest, len(changes) - len(latest)
}
