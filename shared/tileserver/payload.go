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
// t, once: every field but Server-Timing (and a reflected CORS origin),
// which the adapter writes into the hole at p.split.
func (s *Server) buildPayload(p *prepared, t *tile.Tile) {
	enc := base64.StdEncoding
	b := make([]byte, 0, 512+enc.EncodedLen(len(t.Body)))
	b = append(b, `{"statusCode":200,"headers":{`...)
	field := func(name string, v []string) {
		if v == nil {
			return
		}
		q, _ := json.Marshal(v[0]) // a string always encodes
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = append(b, q...)
		b = append(b, ',')
	}
	field("Content-Type", p.contentType)
	field("Content-Encoding", p.contentEncoding)
	field("Vary", p.vary)
	field("Etag", p.etag)
	field("Last-Modified", p.lastModified)
	field("Cache-Control", p.cacheControl)
	field("X-Cache", xCacheValues[srcMemory])
	field("Accept-Ranges", acceptRangesBytes)
	field("Content-Length", p.contentLength)
	if s.cors.any {
		field("Access-Control-Allow-Origin", allowAny)
		field("Access-Control-Expose-Headers", exposeHeaders)
	}
	b = append(b, `"Server-Timing":"`...)
	p.split = len(b)
	b = append(b, `},"body":"`...)
	b = enc.AppendEncode(b, t.Body)
	b = append(b, `","isBase64Encoded":true}`...)
	p.payload = b
}
