// Package journal is the purge journal: one object in the bucket, the head,
// that records every purge as a numbered entry, for every function instance
// to follow (package follower).
//
// It is correct by construction, because the head is the only thing anybody
// writes, and only by compare-and-swap:
//
//   - A sequence number is never handed out twice, and a write that lags or
//     fails never hides a later entry: an append PUTs the head with If-Match
//     on the ETag it read (If-None-Match: * to create it), and a writer that
//     lost the race re-reads and tries again. A failed write changed nothing.
//   - A reader catches up in one GET whatever the backlog, as the head keeps
//     the most recent entries, and a check that finds nothing new is a 304.
//   - A reader can tell when it cannot trust what it reads: a wiped journal
//     comes back with a new id, a reader behind the oldest entry the head
//     keeps knows it, and a Position names the entry it applied by its
//     digest, so another entry found at that number is seen to be one.
//   - A Journal refuses to write to a store that accepts the conditions and
//     ignores them (ErrNoConditionalWrites), where concurrent appends would
//     overwrite each other without a word.
//
// Nothing expires: there is no lifecycle rule to race. Readers need
// s3:GetObject on the head and s3:ListBucket on the bucket (without it S3
// answers 403, not 404, for the head of a journal not yet written); writers
// also need s3:PutObject.
package journal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
)

// Entry is one purge recorded in the journal.
type Entry struct {
	Seq      uint64    `json:"seq"`
	Prefixes []string  `json:"prefixes"`
	Time     time.Time `json:"time"`
	Source   string    `json:"source,omitempty"`
}

// Options tunes a Journal.
type Options struct {
	// Now is the clock stamped on entries; default time.Now.
	Now func() time.Time
	// Window is how many of the most recent entries the head keeps. A reader
	// further behind than that drops its tiers instead of reading what it
	// missed. Default DefaultWindow.
	Window int
	// MaxHeadBytes bounds the encoded head; the oldest entries go first when
	// it would be larger. Default DefaultMaxHeadBytes.
	MaxHeadBytes int
	// Logger reports appends that had to retry; default discards.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultWindow       = 1024
	DefaultMaxHeadBytes = 1 << 20
)

// Limits of the journal.
const (
	maxAppendAttempts = 64       // lost compare-and-swaps in a row before Append gives up
	maxEntryBytes     = 64 << 10 // an entry larger than this is recorded as a purge of everything
	maxReadBytes      = 8 << 20  // a head larger than this is refused as corrupt
)

// Journal is the journal under one key prefix, kept in the bucket outside
// TILES_PREFIX. Its head, "<prefix>head.json", carries the journal's id, the
// last sequence number and the most recent entries:
//
//	{"journal":"5f0c…","seq":42,"entries":[{"seq":41,…},{"seq":42,…}]}
//
// Before its first write a Journal probes the bucket once (Verify) and
// refuses to append where the conditions are not honoured. Against a store
// that passed, a 200 to a PUT with If-Match is a compare-and-swap won, and a
// warm append stays one PUT.
//
// A Journal is safe for concurrent use.
type Journal struct {
	api    *s3.Client
	bucket string
	prefix string
	opts   Options
	log    *slog.Logger

	mu       sync.Mutex // guards last, known and verified, and serialises this process's appends
	last     Snapshot   // the head as this process last wrote it
	known    bool       // last is set: a warm writer tries its compare-and-swap first
	verified bool       // Probe found that the bucket honours conditional writes
}

// New returns the journal at bucket/prefix. prefix is normally
// "_tilesieve/journal/".
func New(api *s3.Client, bucket, prefix string, opts Options) *Journal {
	opts.Now = defaults.Clock(opts.Now)
	opts.Window = defaults.Positive(opts.Window, DefaultWindow)
	opts.MaxHeadBytes = defaults.Positive(opts.MaxHeadBytes, DefaultMaxHeadBytes)
	return &Journal{api: api, bucket: bucket, prefix: prefix, opts: opts, log: defaults.Logger(opts.Logger)}
}

// Prefix is the key prefix the journal lives under.
func (j *Journal) Prefix() string { return j.prefix }

// HeadKey is the object key of the head.
func (j *Journal) HeadKey() string { return j.prefix + "head.json" }

// Snapshot is the head as one read found it.
type Snapshot struct {
	Journal string  `json:"journal"` // the journal's id; a new id is a new journal
	Seq     uint64  `json:"seq"`     // the last sequence number handed out
	Entries []Entry `json:"entries"` // the most recent entries, oldest first, the last one Seq

	ETag    string `json:"-"` // the head object's version
	Missing bool   `json:"-"` // no head: the journal was never written, or was wiped
}

// Oldest is the sequence number of the oldest entry s holds (Seq+1 when it
// holds none): a reader at position p can catch up from s if p+1 ≥ Oldest.
func (s Snapshot) Oldest() uint64 {
	if len(s.Entries) == 0 {
		return s.Seq + 1
	}
	return s.Entries[0].Seq
}

// Errors.
var (
	// ErrNoPrefixes is returned by Append for an empty purge.
	ErrNoPrefixes = errors.New("journal: entry without prefixes")
	// ErrUnchanged is returned by Read when the head still has the ETag
	// given: nothing was appended since.
	ErrUnchanged = errors.New("journal: unchanged")
	// ErrCorrupt is a head that cannot be decoded. Readers treat it as a
	// failed read; the next Append replaces it with a new journal.
	ErrCorrupt = errors.New("journal: head unreadable")
)

// Read reads the head. With ifNoneMatch set to the ETag of an earlier
// snapshot it returns ErrUnchanged if nothing changed (one GET answered 304).
// A missing head is a Snapshot with Missing set, not an error.
func (j *Journal) Read(ctx context.Context, ifNoneMatch string) (Snapshot, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(j.HeadKey())}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	// No retries here: a check runs on the request path within its timeout,
	// and the next one is an interval away.
	out, err := j.api.GetObject(ctx, in, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	switch status(err) {
	case 0:
	case http.StatusNotModified:
		return Snapshot{}, ErrUnchanged
	case http.StatusNotFound:
		return Snapshot{Missing: true}, nil
	default:
		return Snapshot{}, fmt.Errorf("journal: read head: %w", err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxReadBytes+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("journal: read head: %w", err)
	}
	s, err := decodeHead(body)
	if err != nil {
		return Snapshot{}, err
	}
	s.ETag = aws.ToString(out.ETag)
	return s, nil
}

// decodeHead parses and checks a head: entries contiguous and ending at Seq.
func decodeHead(body []byte) (Snapshot, error) {
	var s Snapshot
	if len(body) > maxReadBytes {
		return Snapshot{}, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(body))
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if s.Journal == "" {
		return Snapshot{}, fmt.Errorf("%w: no journal id", ErrCorrupt)
	}
	for i, e := range s.Entries {
		if e.Seq != s.Seq-uint64(len(s.Entries)-1-i) || e.Seq == 0 {
			return Snapshot{}, fmt.Errorf("%w: entry %d has seq %d, head seq %d", ErrCorrupt, i, e.Seq, s.Seq)
		}
	}
	return s, nil
}

// Head returns the sequence number of the latest entry (0 for a journal not
// yet written).
func (j *Journal) Head(ctx context.Context) (uint64, error) {
	s, err := j.Read(ctx, "")
	if err != nil {
		return 0, err
	}
	return s.Seq, nil
}

// Append records one purge and returns its entry. Concurrent appends, in one
// process or many, each get their own sequence number; none is lost. A
// request that S3 applied but whose answer was lost can leave the same purge
// recorded twice, which is harmless.
func (j *Journal) Append(ctx context.Context, prefixes []string, source string) (Entry, error) {
	if len(prefixes) == 0 {
		return Entry{}, ErrNoPrefixes
	}
	e := Entry{Prefixes: prefixes, Time: j.opts.Now().UTC(), Source: source}
	if b, _ := json.Marshal(e); len(b) > maxEntryBytes {
		// Too many prefixes to carry: purging everything covers them all.
		e.Prefixes, e.Source = []string{""}, source+" (too many prefixes: everything)"
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.verify(ctx); err != nil {
		return Entry{}, fmt.Errorf("journal: append refused: %w", err)
	}
	cur := j.last
	if !j.known {
		// A cold writer reads first: a GET is cheaper than a PUT bound to fail.
		var err error
		if cur, err = j.readForAppend(ctx); err != nil {
			return Entry{}, err
		}
	}
	for attempt := 1; ; attempt++ {
		next, body, err := j.extend(cur, e)
		if err != nil {
			return Entry{}, err
		}
		in := &s3.PutObjectInput{
			Bucket:      aws.String(j.bucket),
			Key:         aws.String(j.HeadKey()),
			Body:        bytes.NewReader(body),
			ContentType: aws.String("application/json"),
		}
		if cur.Missing {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(cur.ETag)
		}
		out, err := j.api.PutObject(ctx, in)
		code := status(err)
		if code == 0 {
			next.ETag = aws.ToString(out.ETag)
			j.last, j.known = next, true
			return next.Entries[len(next.Entries)-1], nil
		}
		switch code {
		case http.StatusPreconditionFailed, http.StatusNotFound, http.StatusConflict:
			// Another writer moved the head (412), removed it (404: If-Match
			// on a missing key), or is writing it now (409,
			// ConditionalRequestConflict). Read it again and build on that.
		default:
			return Entry{}, fmt.Errorf("journal: append entry %d: %w", next.Seq, err)
		}
		if attempt == maxAppendAttempts {
			return Entry{}, fmt.Errorf("journal: append: lost %d compare-and-swaps in a row: %w", attempt, err)
		}
		j.log.DebugContext(ctx, "purge journal: head moved under an append, retrying", "attempt", attempt, "status", code)
		if cur, err = j.readForAppend(ctx); err != nil {
			return Entry{}, err
		}
	}
}

// readForAppend reads the head an append builds on. A head nobody can read
// is replaced by a new journal: every reader then sees a new id and drops
// its tiers, which is all a reader of an unknown purge can safely do.
func (j *Journal) readForAppend(ctx context.Context) (Snapshot, error) {
	cur, err := j.Read(ctx, "")
	if errors.Is(err, ErrCorrupt) {
		j.log.ErrorContext(ctx, "purge journal: head unreadable, starting a new journal", "err", err)
		return j.corruptHead(ctx)
	}
	return cur, err
}

// corruptHead returns a snapshot that, extended, replaces the unreadable
// head: a new journal id, If-Match on the unreadable version's ETag.
func (j *Journal) corruptHead(ctx context.Context) (Snapshot, error) {
	out, err := j.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(j.HeadKey())})
	if status(err) == http.StatusNotFound {
		return Snapshot{Missing: true}, nil
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("journal: head of an unreadable journal: %w", err)
	}
	return Snapshot{ETag: aws.ToString(out.ETag)}, nil // no id: extend starts a new journal
}

// extend returns cur with e appended as its next entry, trimmed to the
// window, and its encoding.
func (j *Journal) extend(cur Snapshot, e Entry) (Snapshot, []byte, error) {
	next := Snapshot{Journal: cur.Journal, Seq: cur.Seq + 1}
	if cur.Missing || cur.Journal == "" {
		id, err := newJournalID()
		if err != nil {
			return Snapshot{}, nil, err
		}
		next = Snapshot{Journal: id, Seq: 1}
	} else {
		keep := cur.Entries[max(0, len(cur.Entries)-(j.opts.Window-1)):]
		next.Entries = append(make([]Entry, 0, len(keep)+1), keep...)
	}
	e.Seq = next.Seq
	next.Entries = append(next.Entries, e)
	for {
		body, err := json.Marshal(next)
		if err != nil {
			return Snapshot{}, nil, fmt.Errorf("journal: encode head: %w", err)
		}
		if len(body) <= j.opts.MaxHeadBytes || len(next.Entries) == 1 {
			return next, body, nil
		}
		// Drop the oldest quarter at a time: few re-encodings, and the head
		// stays well inside its bound.
		next.Entries = next.Entries[max(1, len(next.Entries)/4):]
	}
}

// newJournalID names a new journal: 128 random bits.
func newJournalID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("journal: new id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// status is the HTTP status of a failed AWS call, or 0.
func status(err error) int {
	if err == nil {
		return 0
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		return re.HTTPStatusCode()
	}
	return -1 // no answer: a timeout or a connection that failed
}
