package s3notify

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// op is the kind of S3 request, as far as notifications care.
type op int

const (
	opNone        op = iota
	opPut            // PUT object
	opCopy           // PUT object with x-amz-copy-source
	opPost           // POST bucket, browser form upload
	opComplete       // POST object?uploadId=…, CompleteMultipartUpload
	opDelete         // DELETE object
	opMultiDelete    // POST bucket?delete
)

// captureLimit bounds the request and response bytes kept to find out what
// a request changed (the form's key field, the multi-delete lists).
const captureLimit = 8 << 20

// classify names the operation of r (path-style addressing: /bucket/key).
func classify(r *http.Request) (o op, bucket, key string) {
	bucket, key, _ = strings.Cut(strings.TrimLeft(r.URL.Path, "/"), "/")
	if bucket == "" {
		return opNone, "", ""
	}
	q := r.URL.Query()
	q.Del("x-id") // the SDKs name the operation here; it selects nothing
	switch r.Method {
	case http.MethodPut:
		if key != "" && len(q) == 0 {
			if r.Header.Get("X-Amz-Copy-Source") != "" {
				return opCopy, bucket, key
			}
			return opPut, bucket, key
		}
	case http.MethodPost:
		switch {
		case key == "" && len(q) == 1 && q.Has("delete"):
			return opMultiDelete, bucket, ""
		case key == "" && len(q) == 0:
			return opPost, bucket, ""
		case key != "" && len(q) == 1 && q.Get("uploadId") != "":
			return opComplete, bucket, key
		}
	case http.MethodDelete:
		if key != "" && len(q) == 0 {
			return opDelete, bucket, key
		}
	}
	return opNone, bucket, key
}

// ServeHTTP serves the S3 API and queues the notifications of what changed.
func (n *Notifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o, bucket, key := classify(r)
	if o == opNone || !n.enabled.Load() {
		n.next.ServeHTTP(w, r)
		return
	}
	n.writeMu.Lock()
	defer n.writeMu.Unlock()

	var reqBody *capBuffer
	if o == opPost || o == opMultiDelete {
		reqBody = &capBuffer{max: captureLimit}
		r.Body = readCloser{io.TeeReader(r.Body, reqBody), r.Body}
	}
	cw := &captureWriter{ResponseWriter: w}
	if o == opCopy || o == opComplete || o == opMultiDelete {
		cw.body = &capBuffer{max: captureLimit}
	}
	n.next.ServeHTTP(cw, r)
	if cw.status == 0 {
		cw.status = http.StatusOK
	}
	if cw.status < 200 || cw.status > 299 {
		return
	}
	if (o == opCopy || o == opComplete) && bytes.Contains(cw.body.Bytes(), []byte("<Error>")) {
		// Copy and CompleteMultipartUpload can fail after S3 sent 200.
		return
	}

	meta := requestMeta{
		requestID: w.Header().Get("X-Amz-Request-Id"),
		id2:       w.Header().Get("X-Amz-Id-2"),
		principal: principal(r),
		sourceIP:  sourceIP(r),
	}
	// The read-back belongs to this request even if its client went away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	switch o {
	case opPut:
		n.created(ctx, ObjectCreatedPut, bucket, key, meta)
	case opCopy:
		n.created(ctx, ObjectCreatedCopy, bucket, key, meta)
	case opComplete:
		n.created(ctx, ObjectCreatedCompleteMultipartUpload, bucket, key, meta)
	case opPost:
		k, err := formKey(r.Header.Get("Content-Type"), reqBody.Bytes())
		if err != nil {
			n.log.Warn("S3 event not emitted: the key of a POST upload could not be read", "bucket", bucket, "err", err)
			return
		}
		n.created(ctx, ObjectCreatedPost, bucket, k, meta)
	case opDelete:
		n.removed(bucket, key, meta)
	case opMultiDelete:
		keys, err := deletedKeys(reqBody.Bytes(), cw.body.Bytes())
		if err != nil {
			n.log.Warn("S3 events not emitted: a multi-object delete could not be read", "bucket", bucket, "err", err)
			return
		}
		for _, k := range keys {
			n.removed(bucket, k, meta)
		}
	}
}

// requestMeta is what a record says about the request behind it.
type requestMeta struct {
	requestID, id2, principal, sourceIP string
}

// created queues an ObjectCreated record for bucket/key.
func (n *Notifier) created(ctx context.Context, name, bucket, key string, meta requestMeta) {
	if !n.match(bucket, key) {
		return
	}
	size, etag, err := n.stat(ctx, bucket, key)
	if err != nil {
		// S3 would still notify; the record then lacks the object's size.
		n.log.Warn("S3 event: object not read back after the write", "bucket", bucket, "key", key, "err", err)
	}
	obj := Object{Key: EncodeKey(key), Size: &size, ETag: strings.Trim(etag, `"`)}
	n.emit(name, bucket, key, obj, meta)
}

// removed queues an ObjectRemoved:Delete record for bucket/key.
func (n *Notifier) removed(bucket, key string, meta requestMeta) {
	if !n.match(bucket, key) {
		return
	}
	n.emit(ObjectRemovedDelete, bucket, key, Object{Key: EncodeKey(key)}, meta)
}

func (n *Notifier) match(bucket, key string) bool {
	if strings.HasPrefix(key, n.cfg.Prefix) || slices.Contains(n.cfg.AllKeys, bucket) {
		return true
	}
	n.filtered.Add(1)
	return false
}

// emit builds the notification and queues it. Callers hold writeMu.
func (n *Notifier) emit(name, bucket, key string, obj Object, meta requestMeta) {
	now := time.Now()
	// Sequencers rise with every event and stay above the clock, so they
	// also rise across restarts of the stack.
	n.lastSeq = max(n.lastSeq+1, uint64(now.UnixNano()))
	obj.Sequencer = fmt.Sprintf("%018X", n.lastSeq)
	rec := Record{
		EventVersion:      "2.1",
		EventSource:       "aws:s3",
		AWSRegion:         n.cfg.Region,
		EventTime:         now.UTC().Format("2006-01-02T15:04:05.000Z"),
		EventName:         name,
		UserIdentity:      Identity{PrincipalID: meta.principal},
		RequestParameters: RequestParameters{SourceIPAddress: meta.sourceIP},
		ResponseElements:  ResponseElements{RequestID: meta.requestID, ID2: meta.id2},
		S3: Entity{
			SchemaVersion:   "1.0",
			ConfigurationID: n.cfg.ConfigurationID,
			Bucket:          Bucket{Name: bucket, OwnerIdentity: Identity{PrincipalID: ownerID}, ARN: "arn:aws:s3:::" + bucket},
			Object:          obj,
		},
	}
	raw, err := json.Marshal(Event{Records: []Record{rec}})
	if err != nil {
		n.log.Error("S3 event not encoded", "err", err)
		return
	}
	if !n.enqueue(item{raw: raw, name: name, bucket: bucket, key: key}) {
		n.failed.Add(1)
		n.log.Warn("S3 event dropped: shutting down", "event", name, "key", key)
		return
	}
	n.emitted.Add(1)
}

// ownerID stands for the bucket owner's canonical ID.
const ownerID = "A3TILESIEVELOCAL"

// principal is "AWS:<access key id>" from the request's SigV4 credential.
func principal(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if auth := r.Header.Get("Authorization"); auth != "" {
		if _, rest, ok := strings.Cut(auth, "Credential="); ok {
			cred = rest
		}
	}
	id, _, _ := strings.Cut(cred, "/")
	if id == "" {
		return "anonymous"
	}
	return "AWS:" + id
}

func sourceIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// formKey reads the "key" field of a browser-form upload body.
func formKey(contentType string, body []byte) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return "", fmt.Errorf("content type %q is not a multipart form", contentType)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			return "", fmt.Errorf("no key field: %w", err)
		}
		if p.FormName() == "key" {
			v, err := io.ReadAll(io.LimitReader(p, 4096))
			if err != nil {
				return "", err
			}
			return string(v), nil
		}
	}
}

// deleteRequest and deleteResult are the XML bodies of a multi-object delete.
type deleteRequest struct {
	Objects []struct {
		Key string `xml:"Key"`
	} `xml:"Object"`
}

type deleteResult struct {
	Errors []struct {
		Key string `xml:"Key"`
	} `xml:"Error"`
}

// deletedKeys is what a multi-object delete removed: the keys it asked for,
// less those the response reports errors for. (In quiet mode the response
// lists only the errors, so the request is the only list of what went.)
func deletedKeys(reqBody, respBody []byte) ([]string, error) {
	var in deleteRequest
	if err := xml.Unmarshal(reqBody, &in); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	var out deleteResult
	if err := xml.Unmarshal(respBody, &out); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	failed := make(map[string]bool, len(out.Errors))
	for _, e := range out.Errors {
		failed[e.Key] = true
	}
	seen := map[string]bool{}
	var keys []string
	for _, o := range in.Objects {
		if failed[o.Key] || seen[o.Key] {
			continue
		}
		seen[o.Key] = true
		keys = append(keys, o.Key)
	}
	return keys, nil
}

// captureWriter records the status of a response and, if body is set, a
// copy of its bytes.
type captureWriter struct {
	http.ResponseWriter
	status int
	body   *capBuffer
}

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.body != nil {
		c.body.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// capBuffer keeps the first max bytes written to it and drops the rest (a
// truncated XML list then fails to parse, and no event is guessed).
type capBuffer struct {
	bytes.Buffer
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

type readCloser struct {
	io.Reader
	io.Closer
}
