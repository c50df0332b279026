package purge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Entry is one purge recorded in the journal.
type Entry struct {
	Seq      uint64    `json:"seq"`
	Prefixes []string  `json:"prefixes"`
	Time     time.Time `json:"time"`
	Source   string    `json:"source,omitempty"`
}

// JournalOptions tunes a Journal.
type JournalOptions struct {
	// Now is the clock stamped on entries; default time.Now.
	Now func() time.Time
	// Retention is how many entries behind the head a reader may be and still
	// trust that it can read every entry it missed; a reader further behind
	// drops everything instead. Default 10,000. The journal deletes nothing
	// itself: a lifecycle rule on "<prefix>entries/" expires old entries (days,
	// far beyond the time Retention entries take to accumulate).
	Retention uint64
	// Logger reports best-effort failures (the head pointer); default discards.
	Logger *slog.Logger
}

// DefaultRetention is the default JournalOptions.Retention.
const DefaultRetention = 10000

// Limits of the journal.
const (
	maxAppendAttempts = 64      // 412s/409s in a row before Append gives up
	maxEntryBytes     = 4 << 20 // an entry larger than this is unreadable
	readConcurrency   = 16      // GETs in flight in one ReadAfter
	defaultReadMax    = 256
)

// Journal is the purge journal kept in the bucket under a prefix outside
// TILES_PREFIX:
//
//	<prefix>entries/00000000000000000042.json   one immutable entry per sequence number
//	<prefix>head                                 the latest sequence number, best effort
//
// An entry is created with a create-only conditional PUT (If-None-Match: *):
// a 412 means another writer took the number, so the writer takes the next.
// Numbers are therefore contiguous: a writer only moves past n after seeing n
// exist. The head pointer is a plain PUT after each append; it may lag or,
// with racing writers, step back a little, so readers probe forward from it.
//
// Readers need s3:GetObject on the prefix and s3:ListBucket on the bucket
// (without it S3 answers 403 instead of 404 for a missing entry).
//
// A Journal is safe for concurrent use.
type Journal struct {
	api    *s3.Client
	bucket string
	prefix string
	opts   JournalOptions
	log    *slog.Logger

	last atomic.Uint64 // highest sequence number this process saw exist: where Append starts
}

// NewJournal returns the journal at bucket/prefix. prefix is normally
// "_tilesieve/journal/".
func NewJournal(api *s3.Client, bucket, prefix string, opts JournalOptions) *Journal {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Journal{api: api, bucket: bucket, prefix: prefix, opts: opts, log: log}
}

// Prefix is the key prefix the journal lives under.
func (j *Journal) Prefix() string { return j.prefix }

// Retention is JournalOptions.Retention.
func (j *Journal) Retention() uint64 { return j.opts.Retention }

// EntryKey is the object key of entry seq.
func (j *Journal) EntryKey(seq uint64) string {
	return fmt.Sprintf("%sentries/%020d.json", j.prefix, seq)
}

func (j *Journal) headKey() string { return j.prefix + "head" }

// ErrNoPrefixes is returned by Append for an empty purge.
var ErrNoPrefixes = errors.New("purge: entry without prefixes")

// Append records one purge and returns its entry. Concurrent appends, in one
// process or many, each get their own sequence number; none is lost. A
// request that S3 applied but whose answer was lost can leave the same purge
// recorded twice, which is harmless.
func (j *Journal) Append(ctx context.Context, prefixes []string, source string) (Entry, error) {
	if len(prefixes) == 0 {
		return Entry{}, ErrNoPrefixes
	}
	next := j.last.Load() + 1
	if next == 1 {
		head, err := j.Head(ctx)
		if err != nil {
			return Entry{}, err
		}
		next = head + 1
	}
	e := Entry{Prefixes: prefixes, Time: j.opts.Now().UTC(), Source: source}
	for range maxAppendAttempts {
		e.Seq = next
		body, err := json.Marshal(e)
		if err != nil {
			return Entry{}, fmt.Errorf("purge: encode entry: %w", err)
		}
		_, err = j.api.PutObject(ctx, &s3.PutObjectInput{
			Bucket:      aws.String(j.bucket),
			Key:         aws.String(j.EntryKey(next)),
			Body:        bytes.NewReader(body),
			ContentType: aws.String("application/json"),
			IfNoneMatch: aws.String("*"),
		})
		switch status(err) {
		case 0:
			j.observe(next)
			j.writeHead(ctx, next)
			return e, nil
		case http.StatusPreconditionFailed:
			// Taken. Find the end from here with GETs, which cost a tenth of
			// a PUT, rather than trying numbers one by one.
			j.observe(next)
			head, err := j.scanForward(ctx, next)
			if err != nil {
				return Entry{}, err
			}
			next = head + 1
		case http.StatusConflict:
			// A conditional write to the same key was in flight (S3's
			// ConditionalRequestConflict): try the same number again.
		default:
			return Entry{}, fmt.Errorf("purge: append entry %d: %w", next, err)
		}
		if err := ctx.Err(); err != nil {
			return Entry{}, err
		}
	}
	return Entry{}, fmt.Errorf("purge: append: no free sequence number after %d attempts", maxAppendAttempts)
}

func (j *Journal) observe(seq uint64) {
	for {
		cur := j.last.Load()
		if seq <= cur || j.last.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// writeHead moves the head pointer. Losing it only makes the next cold
// reader probe a little further.
func (j *Journal) writeHead(ctx context.Context, seq uint64) {
	_, err := j.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(j.bucket),
		Key:         aws.String(j.headKey()),
		Body:        strings.NewReader(strconv.FormatUint(seq, 10) + "\n"),
		ContentType: aws.String("text/plain"),
	})
	if err != nil {
		j.log.Warn("purge journal: head pointer not updated", "seq", seq, "err", err)
	}
}

// Head returns the sequence number of the latest entry (0 for an empty
// journal): it reads the head pointer and probes forward from it. With a
// current pointer that is two GETs. Without a pointer (a new journal, or one
// whose pointer was lost) it lists the entries to find the last.
func (j *Journal) Head(ctx context.Context) (uint64, error) {
	base, ok, err := j.readHead(ctx)
	if err != nil {
		return 0, err
	}
	if !ok {
		if base, err = j.lastListed(ctx); err != nil {
			return 0, err
		}
	}
	head, err := j.scanForward(ctx, base)
	if err != nil {
		return 0, err
	}
	j.observe(head)
	return head, nil
}

// readHead reads the head pointer; ok is false if it is missing or unreadable.
func (j *Journal) readHead(ctx context.Context) (seq uint64, ok bool, err error) {
	out, err := j.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(j.headKey())})
	if status(err) == http.StatusNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("purge: read journal head: %w", err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 64))
	if err != nil {
		return 0, false, fmt.Errorf("purge: read journal head: %w", err)
	}
	seq, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if perr != nil {
		j.log.Warn("purge journal: unreadable head pointer", "body", string(b))
		return 0, false, nil
	}
	return seq, true, nil
}

// lastListed finds the last entry by listing (keys are zero-padded, so they
// list in numeric order).
func (j *Journal) lastListed(ctx context.Context) (uint64, error) {
	prefix := j.prefix + "entries/"
	var last uint64
	p := s3.NewListObjectsV2Paginator(j.api, &s3.ListObjectsV2Input{Bucket: aws.String(j.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("purge: list journal: %w", err)
		}
		for _, o := range page.Contents {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(o.Key), prefix), ".json")
			if seq, err := strconv.ParseUint(name, 10, 64); err == nil {
				last = max(last, seq)
			}
		}
	}
	return last, nil
}

// scanForward returns the highest existing entry at or after known, which
// exists (or is 0). It probes known+1, +2, +4, ... until one is missing and
// then bisects, so a gap of g costs about 2·log2(g) requests and no gap costs
// one. Entries are contiguous, which makes existence monotone above known.
func (j *Journal) scanForward(ctx context.Context, known uint64) (uint64, error) {
	lo, hi := known, uint64(0) // lo exists, hi (once set) is missing
	for step := uint64(1); ; step *= 2 {
		n := known + step
		ok, err := j.exists(ctx, n)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = n
			break
		}
		lo = n
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := j.exists(ctx, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

func (j *Journal) exists(ctx context.Context, seq uint64) (bool, error) {
	_, err := j.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(j.EntryKey(seq))})
	switch {
	case err == nil:
		return true, nil
	case status(err) == http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("purge: probe journal entry %d: %w", seq, err)
}

// ReadAfter reads up to max entries after sequence number after, in order and
// without gaps. head is the latest sequence number it knows to exist: the last
// entry returned if it reached the end, else (max entries read and more to
// come) the true head, found by probing, so a reader can tell how far behind
// it is. When nothing is new it costs one GET that answers 404.
//
// An entry that exists but cannot be decoded is returned as a purge of
// everything (Prefixes [""]): what it purged is unknown.
func (j *Journal) ReadAfter(ctx context.Context, after uint64, max int) (entries []Entry, head uint64, err error) {
	if max <= 0 {
		max = defaultReadMax
	}
	first, ok, err := j.get(ctx, after+1)
	if err != nil || !ok {
		return nil, after, err
	}
	entries = append(entries, first)
	// More may follow: read windows of growing size in parallel, stopping at
	// the first missing entry.
	for window := 1; len(entries) < max; {
		window = min(window*2, max-len(entries), readConcurrency)
		base := entries[len(entries)-1].Seq
		got := make([]Entry, window)
		found := make([]bool, window)
		errs := make([]error, window)
		var wg sync.WaitGroup
		for i := range window {
			wg.Go(func() { got[i], found[i], errs[i] = j.get(ctx, base+1+uint64(i)) })
		}
		wg.Wait()
		for i := range window {
			if errs[i] != nil {
				return entries, entries[len(entries)-1].Seq, errs[i]
			}
			if !found[i] {
				return entries, entries[len(entries)-1].Seq, nil
			}
			entries = append(entries, got[i])
		}
	}
	head, err = j.scanForward(ctx, entries[len(entries)-1].Seq)
	if err != nil {
		return entries, entries[len(entries)-1].Seq, err
	}
	return entries, head, nil
}

// get reads entry seq; ok is false if it does not exist.
func (j *Journal) get(ctx context.Context, seq uint64) (e Entry, ok bool, err error) {
	out, err := j.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(j.EntryKey(seq))})
	if status(err) == http.StatusNotFound {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("purge: read journal entry %d: %w", seq, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxEntryBytes+1))
	if err != nil {
		return Entry{}, false, fmt.Errorf("purge: read journal entry %d: %w", seq, err)
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Seq != seq || len(body) > maxEntryBytes {
		j.log.Error("purge journal: unreadable entry, purging everything", "seq", seq, "err", err)
		return Entry{Seq: seq, Prefixes: []string{""}, Source: "unreadable entry"}, true, nil
	}
	j.observe(seq)
	return e, true, nil
}

// status is the HTTP status of a failed AWS call, or 0.
func status(err error) int {
	if err == nil {
		return 0
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return -1
}
