package style

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// member is one member of an object, or one element of an array (key ""),
// with its value's byte span in the whole document.
type member struct {
	key        string
	start, end int
}

// members lists the members of the object at doc[start:], which ends at
// len(doc).
func members(doc []byte, start int) ([]member, error) {
	dec, err := open(doc, start, '{')
	if err != nil {
		return nil, err
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("style: %v: %w", err, ErrStyle)
		}
		key, _ := tok.(string)
		m, err := value(dec, doc, start)
		if err != nil {
			return nil, err
		}
		m.key = key
		ms = append(ms, m)
	}
	return ms, nil
}

// elements lists the elements of the array at doc[start:].
func elements(doc []byte, start int) ([]member, error) {
	dec, err := open(doc, start, '[')
	if err != nil {
		return nil, err
	}
	var es []member
	for dec.More() {
		e, err := value(dec, doc, start)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

func open(doc []byte, start int, delim json.Delim) (*json.Decoder, error) {
	if start == 0 && !json.Valid(doc) {
		return nil, fmt.Errorf("style: not JSON: %w", ErrStyle)
	}
	dec := json.NewDecoder(bytes.NewReader(doc[start:]))
	if tok, err := dec.Token(); err != nil || tok != delim {
		return nil, fmt.Errorf("style: want a JSON %v: %w", kind(delim), ErrStyle)
	}
	return dec, nil
}

func kind(d json.Delim) string {
	if d == '{' {
		return "object"
	}
	return "array"
}

// value reads the next value and returns its span; the decoder reads
// doc[off:].
func value(dec *json.Decoder, doc []byte, off int) (member, error) {
	start := off + int(dec.InputOffset())
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return member{}, fmt.Errorf("style: %v: %w", err, ErrStyle)
	}
	// The value starts after the colon or comma and any whitespace.
	for start < len(doc) && (doc[start] == ':' || doc[start] == ',' || isSpace(doc[start])) {
		start++
	}
	return member{start: start, end: off + int(dec.InputOffset())}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
