// Package jsonspan lists the members of a JSON object, or the elements of a
// JSON array, as byte spans of the document they stand in, so that a caller
// can rewrite one value and copy every other byte as it was stored.
//
// It checks the document once (when start is 0) and reads only the level it
// is asked for; deeper values are spans, not decoded. Every error it returns
// means the bytes are not the JSON asked for. Its text has no package
// prefix: callers wrap it with their own sentinel and name, so a user reads
// "style: not JSON", not the name of a helper.
package jsonspan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Span is one member of an object, or one element of an array (Key ""), with
// its value's byte span doc[Start:End] in the whole document.
type Span struct {
	Key        string
	Start, End int
}

// Members lists the members of the object at doc[start:], which ends at
// len(doc). A start of 0 checks the whole document is JSON first.
func Members(doc []byte, start int) ([]Span, error) {
	return list(doc, start, '{')
}

// Elements lists the elements of the array at doc[start:], which ends at
// len(doc).
func Elements(doc []byte, start int) ([]Span, error) {
	return list(doc, start, '[')
}

func list(doc []byte, start int, delim json.Delim) ([]Span, error) {
	if start == 0 && !json.Valid(doc) {
		return nil, errors.New("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(doc[start:]))
	if tok, err := dec.Token(); err != nil || tok != delim {
		return nil, fmt.Errorf("want a JSON %v", kind(delim))
	}
	var out []Span
	for dec.More() {
		var key string
		if delim == '{' {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ = tok.(string)
		}
		s, err := value(dec, doc, start)
		if err != nil {
			return nil, err
		}
		s.Key = key
		out = append(out, s)
	}
	return out, nil
}

func kind(d json.Delim) string {
	if d == '{' {
		return "object"
	}
	return "array"
}

// value reads the next value and returns its span; the decoder reads
// doc[off:].
func value(dec *json.Decoder, doc []byte, off int) (Span, error) {
	start := off + int(dec.InputOffset())
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Span{}, err
	}
	// The value starts after the colon or comma and any whitespace.
	for start < len(doc) && (doc[start] == ':' || doc[start] == ',' || isSpace(doc[start])) {
		start++
	}
	return Span{Start: start, End: off + int(dec.InputOffset())}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
