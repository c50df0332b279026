// Package cdn is the vocabulary of a CDN purge, shared by the purge pipeline
// and the CloudFront invalidator (package cdn/cloudfront) without linking
// either into the other, nor CloudFront's API client into the tile function:
// how targets (directories, open prefixes, single keys) become CloudFront
// paths (Paths, IsWildcard), how paths count against the budget of paths in
// progress (Count, Usage, Fit), the caller reference that makes a retried
// batch one invalidation (CallerReference), and what an invalidation did
// (Outcome).
//
// The package knows nothing of how targets are coalesced: the caller (the
// purge pipeline) hands its coalescer in as a Shrink, so dependencies point
// one way, from purge to cdn.
package cdn

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
)

// CloudFront's quotas of invalidation paths in progress per distribution.
const (
	MaxWildcardPathsInProgress = 15
	MaxExactPathsInProgress    = 3000
)

// ErrNoBudget means the distribution's invalidation budget did not free up
// before the wait ended; the caller should retry the batch later.
var ErrNoBudget = errors.New("cdn: too many invalidation paths in progress")

// Usage counts invalidation paths.
type Usage struct {
	Wildcard int // paths ending in *
	Exact    int
}

// Add sums two counts.
func (u Usage) Add(o Usage) Usage { return Usage{u.Wildcard + o.Wildcard, u.Exact + o.Exact} }

// Outcome is what InvalidateTargets did.
type Outcome struct {
	// Paths are the paths it sent; on an error, the ones it meant to send.
	Paths []string
	// Throttled counts the times CloudFront held the batch back:
	// CreateInvalidation answers of throttling or
	// TooManyInvalidationsInProgress (each retried), and waits for the
	// budget of paths in progress to free up.
	Throttled int
}

// Shrink coalesces a batch's targets further upward into at most limit
// targets that still cover all of them (purge.CoalesceConfig.Shrink is one).
// InvalidateTargets lowers limit until the batch fits the budget left.
type Shrink func(targets []string, limit int) []string

// Fit returns targets as they are when their paths (under pathPrefix) fit in
// free, or else shrunk through shrink to ever fewer entries until they do;
// ok is false, with targets unchanged, when none does.
func Fit(pathPrefix string, targets []string, free Usage, shrink Shrink) (batch []string, ok bool) {
	if within(Count(Paths(pathPrefix, targets)), free) {
		return targets, true
	}
	if shrink == nil || free.Wildcard < 0 || free.Exact < 0 {
		return targets, false
	}
	for limit := len(targets) - 1; limit >= 1; limit-- {
		if t := shrink(targets, limit); within(Count(Paths(pathPrefix, t)), free) {
			return t, true
		}
	}
	return targets, false
}

func within(u, free Usage) bool { return u.Wildcard <= free.Wildcard && u.Exact <= free.Exact }

// Count sorts CloudFront paths into wildcard (ending in *) and exact ones,
// as CloudFront counts them against its two budgets.
func Count(paths []string) Usage {
	var u Usage
	for _, p := range paths {
		if strings.HasSuffix(p, "*") {
			u.Wildcard++
		} else {
			u.Exact++
		}
	}
	return u
}

// IsWildcard reports whether a target stands for everything under it rather
// than for one key: a directory ("a/b/", or "" for everything) or an open
// prefix, marked by a trailing "*" ("osm/1*" is every key starting "osm/1",
// as the admin API purges). An S3 key that itself ends in "*" is taken as an
// open prefix too, which purges more than it, never less.
func IsWildcard(target string) bool {
	return target == "" || strings.HasSuffix(target, "/") || strings.HasSuffix(target, "*")
}

// Paths turns targets into CloudFront paths, escaped as CloudFront asks (see
// escapePath): a directory becomes the wildcard path "/" + pathPrefix + dir +
// "*" ("" becomes "/"+pathPrefix+"*"), an open prefix "p*" the wildcard path
// "/" + pathPrefix + p + "*", and a single key the exact path "/" +
// pathPrefix + key, which CloudFront counts against its far larger budget of
// exact paths. pathPrefix is normalised as Config.PathPrefix.
func Paths(pathPrefix string, targets []string) []string {
	pathPrefix = normPathPrefix(pathPrefix)
	paths := make([]string, 0, len(targets))
	for _, t := range targets {
		if IsWildcard(t) {
			paths = append(paths, "/"+escapeTarget(pathPrefix, strings.TrimSuffix(t, "*"))+"*")
			continue
		}
		paths = append(paths, "/"+escapeTarget(pathPrefix, t))
	}
	return paths
}

// escapeTarget is pathPrefix + t as a path CloudFront matches requests
// with. Keys are paths decoded, but for the IIIF answers of an image: their
// key holds the image id as its URL does, one segment with its slashes
// escaped (iiif/3/maps%2Fa/), which stays as it is.
func escapeTarget(pathPrefix, t string) string {
	for _, v := range [...]string{"iiif/2/", "iiif/3/"} {
		if rest, ok := strings.CutPrefix(t, v); ok {
			id, after, _ := strings.Cut(rest, "/")
			if after != "" || strings.HasSuffix(rest, "/") {
				after = "/" + after
			}
			return escapePath(pathPrefix+v) + id + escapePath(after)
		}
	}
	return escapePath(pathPrefix + t)
}

func normPathPrefix(p string) string {
	p = strings.TrimLeft(p, "/")
	if p != "" && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// escapePath percent-encodes what CloudFront asks to be encoded in an
// invalidation path (non-ASCII bytes and the characters RFC 1738 calls
// unsafe) and what would change the path's meaning there: "*" (the wildcard),
// "?" (a query string) and "%" itself. Everything else stays as it is,
// because CloudFront does not invalidate a path whose safe characters were
// encoded differently from the request.
func escapePath(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safePathByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func safePathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("/-._$+!'(),;:@=&", c) >= 0
}

// CallerReference derives the caller reference of a batch: the hex SHA-256 of
// batchID and the sorted paths (64 characters; CloudFront allows 128).
func CallerReference(batchID string, paths []string) string {
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	h := sha256.New()
	h.Write([]byte(batchID))
	for _, p := range sorted {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
