package journal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// ErrNoConditionalWrites is the verdict of a probe that found the bucket
// does not honour If-None-Match: * or If-Match on PUT. The journal's
// compare-and-swap then silently loses concurrent appends, so Append
// refuses to write.
var ErrNoConditionalWrites = errors.New("journal: the S3 store does not honour conditional writes (If-None-Match: * and If-Match on PUT), which the purge journal needs")

// probeWrongETag is an ETag no object has: an MD5 of zeros.
const probeWrongETag = `"00000000000000000000000000000000"`

// ProbeStep is one request of the conditional-write probe.
type ProbeStep struct {
	Request string // what was sent, e.g. `PUT <key> with If-None-Match: *`
	Want    string // what a store that honours conditional writes answers
	Status  int    // the HTTP status answered; -1 for no answer
	OK      bool   // the answer is the one wanted
	Err     error  // the call's error, if it failed
}

// ProbeKey is the object the probe writes: one small object under the
// journal prefix, overwritten by every probe (never deleted, so writers
// need no s3:DeleteObject, and never more than one).
func (j *Journal) ProbeKey() string { return j.prefix + "probe.json" }

// Probe checks that the bucket honours conditional writes on PUT, with
// three PUTs of ProbeKey: an unconditional one, so that the object exists;
// one with If-None-Match: *, which must be refused (412); one with If-Match
// on an ETag no object has, which must be refused (412). It returns the
// steps it took and, when the store accepted a write it should have
// refused, or does not implement the condition, an error wrapping
// ErrNoConditionalWrites. Any other failure (no answer, access denied) is
// returned as it is: the store's verdict is then unknown. Concurrent probes
// of the same bucket do not disturb each other: nobody deletes the object,
// and no object has the wrong ETag.
func (j *Journal) Probe(ctx context.Context) ([]ProbeStep, error) {
	key := j.ProbeKey()
	body := fmt.Sprintf(`{"probe":"tilesieve checks that this bucket honours conditional writes","time":%q}`,
		j.opts.Now().UTC().Format(time.RFC3339Nano))
	steps := []struct {
		in       *s3.PutObjectInput
		request  string
		want     int
		feature  string // the condition a 200 shows to be ignored
		describe string
	}{
		{in: &s3.PutObjectInput{}, request: "PUT " + key, want: http.StatusOK},
		{in: &s3.PutObjectInput{IfNoneMatch: aws.String("*")}, request: "PUT " + key + " with If-None-Match: * (the object exists)",
			want: http.StatusPreconditionFailed, feature: "If-None-Match: *", describe: "a create-only PUT of an existing object"},
		{in: &s3.PutObjectInput{IfMatch: aws.String(probeWrongETag)}, request: "PUT " + key + " with If-Match: " + probeWrongETag + " (not its ETag)",
			want: http.StatusPreconditionFailed, feature: "If-Match", describe: "a PUT with an If-Match no object matches"},
	}
	var done []ProbeStep
	for _, s := range steps {
		in := s.in
		in.Bucket, in.Key = aws.String(j.bucket), aws.String(key)
		in.Body, in.ContentType = strings.NewReader(body), aws.String("application/json")
		_, err := j.api.PutObject(ctx, in)
		code := status(err)
		if code == 0 {
			code = http.StatusOK
		}
		step := ProbeStep{Request: s.request, Want: wantText(s.want), Status: code, Err: err}
		// S3 answers 409 ConditionalRequestConflict to a conditional write
		// that races another on the key: a refusal too.
		step.OK = code == s.want || s.want == http.StatusPreconditionFailed && code == http.StatusConflict
		done = append(done, step)
		switch {
		case step.OK:
		case s.feature != "" && code == http.StatusOK:
			return done, fmt.Errorf("journal: %s succeeded, so the bucket ignores %s on PUT: %w", s.describe, s.feature, ErrNoConditionalWrites)
		case notImplemented(err):
			return done, fmt.Errorf("journal: %s answered %d: %w (%w)", s.request, code, ErrNoConditionalWrites, err)
		default:
			return done, fmt.Errorf("journal: probe of conditional writes: %s: %w", s.request, err)
		}
	}
	return done, nil
}

func wantText(code int) string {
	if code == http.StatusPreconditionFailed {
		return "412 Precondition Failed (or 409 ConditionalRequestConflict)"
	}
	return fmt.Sprintf("%d %s", code, http.StatusText(code))
}

// notImplemented reports whether err is the store saying it does not
// implement what was asked (501, or the NotImplemented error code some
// stores send with 400).
func notImplemented(err error) bool {
	if status(err) == http.StatusNotImplemented {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NotImplemented"
}

// Verify runs Probe once per Journal: the first call that succeeds is
// remembered and later calls cost nothing. Append calls it before its first
// write, so no caller has to. A failed probe is not remembered, so a store
// that is fixed, or an error that passes, is probed again by the next call.
func (j *Journal) Verify(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.verify(ctx)
}

// verify is Verify with j.mu held.
func (j *Journal) verify(ctx context.Context) error {
	if j.verified {
		return nil
	}
	if _, err := j.Probe(ctx); err != nil {
		return err // the caller logs it, with the batch it could not record
	}
	j.verified = true
	return nil
}
