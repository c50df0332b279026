package pooled

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"sync"
)

// Package pooled builds the buffered function-URL payloads the tile
// function encodes per invocation (a disk hit, a 304, a decoded tile, a
// document: any answer that is not a memory hit's prepared payload) in
// pooled buffers, and reads a body from a file into another, so that an
// invocation leaves no garbage the size of its tile: the Lambda runtime
// closes the payload once it has sent it, which gives its buffer back.

// maxPooled is the largest buffer kept for reuse: a rare large answer
// must not keep megabytes for the next.
const maxPooled = 1 << 20

// bodies hold bodies read from files, payloads the payloads built: two
// pools, so that each buffer settles at the size of what it holds.
var bodies, payloads = newPool(), newPool()

type pool struct{ p sync.Pool }

func newPool() *pool { return &pool{sync.Pool{New: func() any { return new(bytes.Buffer) }}} }

func (p *pool) get(n int) *bytes.Buffer {
	b := p.p.Get().(*bytes.Buffer)
	b.Reset()
	b.Grow(n)
	return b
}

func (p *pool) put(b *bytes.Buffer) {
	if b != nil && b.Cap() <= maxPooled {
		p.p.Put(b)
	}
}

// ReadBody reads r into a pooled buffer, which PutBody gives back: size
// bytes when size ≥ 0 (its Content-Length, checked already), else at most
// limit. A disk hit's body is taken from its file as the disk tier sends
// it (disk.Body.SendTo).
func ReadBody(r io.Reader, size, limit int64) (*bytes.Buffer, error) {
	if size < 0 {
		size = 64 << 10
	}
	b := bodies.get(int(min(size, limit)) + bytes.MinRead)
	var err error
	if s, ok := r.(interface {
		SendTo(io.Writer) (int64, error)
	}); ok {
		_, err = s.SendTo(b)
	} else {
		_, err = b.ReadFrom(io.LimitReader(r, limit))
	}
	return b, err
}

// PutBody gives back a buffer ReadBody filled; nil is none.
func PutBody(b *bytes.Buffer) { bodies.put(b) }

// StubTail ends the JSON of an events.LambdaFunctionURLResponse whose
// Body is empty and IsBase64Encoded false: where Build puts the body.
const StubTail = `"body":"","isBase64Encoded":false,"cookies":null}`

// Build is the payload stub describes (the response's JSON without its
// body) with body in it: as a JSON string when it travels as text, else
// base64. It is nil if stub is not such JSON.
func Build(stub, body []byte, text bool) *Payload {
	head, ok := bytes.CutSuffix(stub, []byte(StubTail))
	if !ok {
		return nil
	}
	b := payloads.get(len(stub) + base64.StdEncoding.EncodedLen(len(body)) + 8)
	b.Write(head)
	b.WriteString(`"body":"`)
	switch {
	case text:
		q, _ := json.Marshal(string(body)) // a text answer: a document, small
		b.Write(q[1 : len(q)-1])
		b.WriteString(`","isBase64Encoded":false`)
	case len(body) > 0:
		b.Write(base64.StdEncoding.AppendEncode(b.AvailableBuffer(), body))
		b.WriteString(`","isBase64Encoded":true`)
	default:
		b.WriteString(`","isBase64Encoded":false`)
	}
	b.WriteString(`,"cookies":null}`)
	p := &Payload{buf: b}
	p.r.Reset(b.Bytes())
	return p
}

// Payload reads a payload built in a pooled buffer, and gives the buffer
// back when the runtime closes it. It has no exported fields, so the
// runtime passes it through unencoded.
type Payload struct {
	r   bytes.Reader
	buf *bytes.Buffer
}

func (p *Payload) Read(b []byte) (int, error) { return p.r.Read(b) }

// WriteTo writes the rest of the payload to w without an intermediate copy.
func (p *Payload) WriteTo(w io.Writer) (int64, error) { return p.r.WriteTo(w) }

// Len is how much of the payload is left to read.
func (p *Payload) Len() int { return p.r.Len() }

// Close gives the buffer back; the payload must not be read after.
func (p *Payload) Close() error {
	p.r.Reset(nil)
	payloads.put(p.buf)
	p.buf = nil
	return nil
}
