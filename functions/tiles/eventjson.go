package main

// The function-URL event is decoded on every invocation. With encoding/json
// alone, a memory hit of a small tile spends about a third of its CPU in
// process on that, beyond what aws-lambda-go's own decoding costs every Go
// function: the runtime's decoder has scanned the payload and skipped over it
// to hand it to urlEvent.UnmarshalJSON, and json.Unmarshal there validates
// it once more before decoding it by reflection. decodeEvent instead reads
// the fields the server uses in one pass over the bytes, validating what it
// skips as it goes.
//
// It covers what function URLs send: keys in ASCII without escapes, and the
// values it keeps as strings in ASCII whose escapes are the one-character
// ones (\" \\ \/ \b \f \n \r \t). For anything else (a \u escape or a byte
// outside ASCII in a value it keeps, a key with an escape, a value of another
// type where a string or an object is wanted, nesting deeper than
// maxEventDepth, anything that is not JSON) it reports false, and
// UnmarshalJSON decodes the event with encoding/json as before. So every
// payload decodes as encoding/json decodes it: keys matched to fields
// regardless of ASCII case, the last of repeated keys winning, null leaving a
// field as it was. FuzzDecodeEvent compares the two on every input.

// maxEventDepth is the deepest nesting of arrays and objects decodeEvent
// skips over; a deeper payload is left to encoding/json.
const maxEventDepth = 64

// eventReader reads one JSON document from b, at offset i.
type eventReader struct {
	b   []byte
	i   int
	buf []byte // a string's unescaped bytes
}

// decodeEvent decodes the JSON object b into ev and reports whether it
// could; on false ev may hold part of b and is to be decoded anew.
func decodeEvent(b []byte, ev *urlEvent) bool {
	r := eventReader{b: b}
	r.ws()
	if !r.object(0, func(key []byte) bool {
		switch {
		case foldEqual(key, "rawPath"):
			return r.str(&ev.RawPath)
		case foldEqual(key, "rawQueryString"):
			return r.str(&ev.RawQueryString)
		case foldEqual(key, "headers"):
			return r.objectOrNull(1, func(key []byte) bool {
				if f := ev.Headers.field(key); f != nil {
					return r.str(f)
				}
				return r.skip(2)
			})
		case foldEqual(key, "requestContext"):
			return r.objectOrNull(1, func(key []byte) bool {
				switch {
				case foldEqual(key, "domainName"):
					return r.str(&ev.RequestContext.DomainName)
				case foldEqual(key, "http"):
					return r.objectOrNull(2, func(key []byte) bool {
						switch {
						case foldEqual(key, "method"):
							return r.str(&ev.RequestContext.HTTP.Method)
						case foldEqual(key, "sourceIp"):
							return r.str(&ev.RequestContext.HTTP.SourceIP)
						}
						return r.skip(3)
					})
				}
				return r.skip(2)
			})
		}
		return r.skip(1)
	}) {
		return false
	}
	r.ws()
	return r.i == len(r.b)
}

// field is the header field a key names (case aside), or nil.
func (h *urlHeaders) field(key []byte) *string {
	var low [32]byte // longer than every name below
	if len(key) > len(low) {
		return nil
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low[:len(key)]) {
	case "accept-encoding":
		return &h.AcceptEncoding
	case "if-match":
		return &h.IfMatch
	case "if-none-match":
		return &h.IfNoneMatch
	case "if-modified-since":
		return &h.IfModifiedSince
	case "if-unmodified-since":
		return &h.IfUnmodifiedSince
	case "range":
		return &h.Range
	case "if-range":
		return &h.IfRange
	case "origin":
		return &h.Origin
	case "access-control-request-method":
		return &h.AccessControlRequestMethod
	case "access-control-request-headers":
		return &h.AccessControlRequestHeaders
	case "host":
		return &h.Host
	case "x-forwarded-host":
		return &h.XForwardedHost
	case "x-forwarded-proto":
		return &h.XForwardedProto
	case "x-tilesieve-cdn":
		return &h.CDNSecret
	case "authorization":
		return &h.Authorization
	case "x-tilesieve-token":
		return &h.Token
	}
	return nil
}

// foldEqual reports whether key is name with its letters in any ASCII case,
// as encoding/json matches a key to a field: letters regardless of case,
// every other byte exactly.
func foldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if n := name[i]; c != n && (c^0x20 != n || n|0x20 < 'a' || n|0x20 > 'z') {
			return false
		}
	}
	return true
}

func (r *eventReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// object reads an object whose keys are plain ASCII, calling field with each
// key, at the key's value, to read the value.
func (r *eventReader) object(depth int, field func(key []byte) bool) bool {
	if depth > maxEventDepth || !r.byte('{') {
		return false
	}
	return r.list('}', func() bool {
		key, ok := r.key()
		return ok && r.colon() && field(key)
	})
}

// list reads the members of an object or the elements of an array, from
// after its opening bracket to its closing one, close: item reads each.
func (r *eventReader) list(close byte, item func() bool) bool {
	r.ws()
	if r.byte(close) {
		return true
	}
	for {
		if !item() {
			return false
		}
		r.ws()
		if r.byte(close) {
			return true
		}
		if !r.byte(',') {
			return false
		}
		r.ws()
	}
}

// colon reads the colon after a key, and the white space around it.
func (r *eventReader) colon() bool {
	r.ws()
	if !r.byte(':') {
		return false
	}
	r.ws()
	return true
}

// objectOrNull is object, or null (which leaves the fields as they were).
func (r *eventReader) objectOrNull(depth int, field func(key []byte) bool) bool {
	if r.literal("null") {
		return true
	}
	return r.object(depth, field)
}

// byte consumes c if it is next.
func (r *eventReader) byte(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *eventReader) literal(s string) bool {
	if len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// key reads a key without escapes, in ASCII, and returns its bytes.
func (r *eventReader) key() ([]byte, bool) {
	if !r.byte('"') {
		return nil, false
	}
	start := r.i
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return r.b[start : r.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// str reads a string into *dst, or null (which leaves *dst as it was).
func (r *eventReader) str(dst *string) bool {
	if r.literal("null") {
		return true
	}
	if !r.byte('"') {
		return false
	}
	start := r.i
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '"':
			*dst = string(r.b[start:r.i])
			r.i++
			return true
		case c == '\\':
			return r.escaped(dst, start)
		case c < 0x20 || c >= 0x80:
			return false
		}
	}
	return false
}

// escaped finishes str for a string with escapes, from its first one.
func (r *eventReader) escaped(dst *string, start int) bool {
	r.buf = append(r.buf[:0], r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		r.i++
		switch {
		case c == '"':
			*dst = string(r.buf)
			return true
		case c == '\\':
			e, short, ok := r.escape()
			if !ok || !short { // not JSON, or \u
				return false
			}
			r.buf = append(r.buf, e)
		case c < 0x20 || c >= 0x80:
			return false
		default:
			r.buf = append(r.buf, c)
		}
	}
	return false
}

// skip reads over any JSON value, checking that it is one.
func (r *eventReader) skip(depth int) bool {
	if r.i == len(r.b) {
		return false
	}
	switch c := r.b[r.i]; {
	case c == '"':
		return r.skipString()
	case c == '{', c == '[':
		if depth > maxEventDepth {
			return false
		}
		r.i++
		if c == '[' {
			return r.list(']', func() bool { return r.skip(depth + 1) })
		}
		return r.list('}', func() bool { return r.skipString() && r.colon() && r.skip(depth+1) })
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return r.skipNumber()
	}
	return false
}

// skipString reads over a string, checking its escapes.
func (r *eventReader) skipString() bool {
	if !r.byte('"') {
		return false
	}
	for r.i < len(r.b) {
		c := r.b[r.i]
		r.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if _, _, ok := r.escape(); !ok {
				return false
			}
		}
	}
	return false
}

// escape reads an escape after its backslash: a short one (\" \\ \/ \b \f
// \n \r \t) is the byte it stands for, and a \u escape has its four hex
// digits checked and is not decoded. ok is false for anything else.
func (r *eventReader) escape() (e byte, short, ok bool) {
	if r.i == len(r.b) {
		return 0, false, false
	}
	e = r.b[r.i]
	r.i++
	switch e {
	case '"', '\\', '/':
		return e, true, true
	case 'b':
		return '\b', true, true
	case 'f':
		return '\f', true, true
	case 'n':
		return '\n', true, true
	case 'r':
		return '\r', true, true
	case 't':
		return '\t', true, true
	case 'u':
		if len(r.b)-r.i < 4 {
			return 0, false, false
		}
		for _, h := range r.b[r.i : r.i+4] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return 0, false, false
			}
		}
		r.i += 4
		return 0, false, true
	}
	return 0, false, false
}

// skipNumber reads over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *eventReader) skipNumber() bool {
	r.byte('-')
	switch {
	case r.byte('0'):
	case r.digits() == 0:
		return false
	}
	if r.byte('.') && r.digits() == 0 {
		return false
	}
	if r.byte('e') || r.byte('E') {
		if !r.byte('+') {
			r.byte('-')
		}
		if r.digits() == 0 {
			return false
		}
	}
	return true
}

// digits reads over decimal digits and returns how many.
func (r *eventReader) digits() int {
	n := 0
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
		n++
	}
	return n
}
