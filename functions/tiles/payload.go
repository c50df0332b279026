package main

import (
	"encoding/base64"
	"encoding/json"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// maxPayloadBody is the largest tile body whose function-URL payload is
// prepared: Lambda's buffered limit is 6 MB for the whole payload, and
// base64 makes a body 4/3 larger.
const maxPayloadBody = config.BufferedBodyBytes

// payload is a tile's buffered function-URL answer to a memory hit,
// encoded once as the tile entered the memory tier (tileserver.Extra):
// every field but Server-Timing and a reflected CORS origin, the two values
// of each request, which the adapter writes into the hole at split.
type payload struct {
	b     []byte
	split int
	moved bool // b is a copy the memory tier keeps off the heap (Moved)
}

var payloadStructSize = unsafe.Sizeof(payload{})

// Cost implements tileserver.Extra: once moved, b is the memory tier's to
// weigh, with the body.
func (p *payload) Cost() int64 {
	if p.moved {
		return p.MovedCost()
	}
	return tile.AllocBytes(int(payloadStructSize)) + tile.AllocBytes(cap(p.b))
}

// MovableBytes, Moved and MovedCost let a memory tier that keeps bodies
// off the heap keep the payload beside the body (tileserver.MovableExtra):
// it is the bulk of what a buffered memory hit answers with.
func (p *payload) MovableBytes() []byte { return p.b }

func (p *payload) Moved(b []byte) tileserver.Extra {
	return &payload{b: b, split: p.split, moved: true}
}

func (p *payload) MovedCost() int64 { return tile.AllocBytes(int(payloadStructSize)) }

// around returns the payload before and after its hole.
func (p *payload) around() (before, after []byte) { return p.b[:p.split], p.b[p.split:] }

// buildPayload is the tileserver.ExtraFunc of BUFFERED mode: the payload of
// a memory hit with fields hit (X-Cache first, Server-Timing last, its value
// left to the hole), or nil for a body too large for one.
func buildPayload(hit []tileserver.Field, body []byte) tileserver.Extra {
	if len(body) > maxPayloadBody {
		return nil
	}
	enc := base64.StdEncoding
	b := make([]byte, 0, 512+enc.EncodedLen(len(body)))
	b = append(b, `{"statusCode":200,"headers":{`...)
	for _, f := range hit[:len(hit)-1] {
		q, _ := json.Marshal(f.Values[0]) // a string always encodes
		b = append(b, '"')
		b = append(b, f.Name...)
		b = append(b, `":`...)
		b = append(b, q...)
		b = append(b, ',')
	}
	b = append(b, `"Server-Timing":"`...)
	p := &payload{split: len(b)}
	b = append(b, `},"body":"`...)
	b = enc.AppendEncode(b, body)
	p.b = append(b, `","isBase64Encoded":true}`...)
	return p
}
