package tileserver

import (
	"encoding/base64"
	"encoding/json"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// MaxPayloadBody is the largest tile body whose function-URL payload is
// prepared: Lambda's buffered limit is 6 MB for the whole payload, and
// base64 makes a body 4/3 larger.
const MaxPayloadBody = (6*1024*1024 - 8*1024) / 4 * 3

var (
	preparedSize = unsafe.Sizeof(prepared{})
	fieldSize    = unsafe.Sizeof(Field{})
)

// buildPayload encodes the buffered function-URL answer of a memory hit on
// t, once, from p.hit: every field but Server-Timing (and a reflected CORS
// origin), which the adapter writes into the hole at p.split.
func (s *Server) buildPayload(p *prepared, t *tile.Tile) {
	enc := base64.StdEncoding
	b := make([]byte, 0, 512+enc.EncodedLen(len(t.Body)))
	b = append(b, `{"statusCode":200,"headers":{`...)
	field := func(name string, v []string) {
		q, _ := json.Marshal(v[0]) // a string always encodes
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = append(b, q...)
		b = append(b, ',')
	}
	// The fields of the memory hit's answer (answerHit): X-Cache and the
	// prepared ones; Server-Timing goes into the hole.
	field("X-Cache", xCacheValues[srcMemory])
	for _, f := range p.hit {
		field(f.Name, f.Values)
	}
	b = append(b, `"Server-Timing":"`...)
	p.split = len(b)
	b = append(b, `},"body":"`...)
	b = enc.AppendEncode(b, t.Body)
	b = append(b, `","isBase64Encoded":true}`...)
	p.payload = b
}
