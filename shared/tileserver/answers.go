package tileserver

import (
	"slices"
	"strconv"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/emptytile"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
)

// Answers formats tile answers from Config: the header values every answer
// shares, and what a tile keeps beside it in the memory tier so that a hit
// formats nothing (Prepare, the engine's hook). It is built before the
// engine, which prepares tiles with it, and the server answers with it.
type Answers struct {
	cfg   Config
	cors  httpspec.CORS
	empty map[string]emptytile.Tile
	extra ExtraFunc

	// Field values shared by every answer.
	cacheControl, negativeCacheControl, staleCacheControl, allow []string
}

// NewAnswers validates cfg and builds its answers.
func NewAnswers(cfg Config) (*Answers, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Answers{cfg: cfg, extra: cfg.Extra}
	a.cors, _ = httpspec.ParseCORS(cfg.CORSAllowOrigins) // validated above
	if cfg.MissingTile == "empty" {
		// Encoding them takes over a millisecond of a cold start that
		// answers no missing tile with one otherwise.
		a.empty = emptytile.Make()
	}
	a.cacheControl = []string{cfg.CacheControl}
	a.negativeCacheControl = []string{cfg.NegativeCacheControl}
	a.staleCacheControl = []string{cfg.StaleCacheControl}
	a.allow = []string{"GET, HEAD"}
	if a.cors.Any || a.cors.Reflect {
		a.allow = allowMethods
	}
	return a, nil
}

// CORSAny reports whether answers carry Access-Control-Allow-Origin: *.
func (a *Answers) CORSAny() bool { return a.cors.Any }

// Extra is what an adapter keeps beside a tile in the memory tier, with its
// prepared answer, and finds again on each memory hit of it
// (Response.Extra): the Lambda adapter's buffered function-URL payload,
// encoded once. Its Cost is charged to the memory tier with the tile.
type Extra interface{ Cost() int64 }

// ExtraFunc builds a tile's Extra, or nil, from the fields of its
// memory-hit answer and its body. The fields are in the order the answer
// has them: X-Cache first, Server-Timing last (its value is the request's:
// Response.Timing; a reflected CORS origin is too, Response.ReflectedOrigin).
type ExtraFunc func(hit []Field, body []byte) Extra

var (
	preparedSize = unsafe.Sizeof(prepared{})
	fieldSize    = unsafe.Sizeof(Field{})
)

// prepared is what a tile keeps beside it in the memory tier so that a hit
// formats nothing: the header values of its stored representation, and the
// adapter's Extra. Its Cost is charged with the tile's.
type prepared struct {
	contentType, contentEncoding, etag, lastModified, contentLength, cacheControl []string
	vary                                                                          []string

	// hit is every field of a 200 answer in the stored representation but
	// the first two (Server-Timing and X-Cache), in answerTile's order: what
	// a request without conditionals or a range is answered with, copied
	// whole (answerHit).
	hit []Field
	// document marks a TileJSON or IIIF info.json: answered as rendered
	// for the URL it is served from (docs.Docs.Render), not as stored.
	document bool
	extra    Extra // nil: none
}

// Cost implements tile.Prepared.
func (p *prepared) Cost() int64 {
	n := tile.AllocBytes(int(preparedSize)) + tile.AllocBytes(cap(p.hit)*int(fieldSize))
	if p.extra != nil {
		n += p.extra.Cost()
	}
	for _, v := range [][]string{p.contentType, p.contentEncoding, p.etag, p.lastModified, p.contentLength, p.cacheControl} {
		if v != nil {
			n += tile.AllocBytes(16) + tile.AllocBytes(len(v[0]))
		}
	}
	return n
}

// MovableExtra is an Extra holding bytes of its own (the buffered payload)
// that a memory tier keeping bodies off the heap keeps beside the body
// (memory.Movable): the prepared answer passes them on.
type MovableExtra interface {
	Extra
	MovableBytes() []byte
	Moved(b []byte) Extra // the same Extra holding b, a copy of MovableBytes
	MovedCost() int64     // Cost once moved
}

// MovableBytes, Moved and MovedCost make a prepared answer a
// memory.Movable through its Extra.
func (p *prepared) MovableBytes() []byte {
	if m, ok := p.extra.(MovableExtra); ok {
		return m.MovableBytes()
	}
	return nil
}

func (p *prepared) Moved(b []byte) tile.Prepared {
	cp := *p
	cp.extra = p.extra.(MovableExtra).Moved(b)
	return &cp
}

func (p *prepared) MovedCost() int64 {
	if m, ok := p.extra.(MovableExtra); ok {
		return p.Cost() - m.Cost() + m.MovedCost()
	}
	return p.Cost()
}

// Prepare builds t's prepared answer before t enters the memory tier at
// key: the engine's Prepare hook.
func (a *Answers) Prepare(key string, t *tile.Tile) {
	if t.Missing || t.Prepared != nil {
		return
	}
	p := a.newPrepared(t)
	tileJSON, info := docs.Kind(key, t)
	p.document = tileJSON || info
	p.hit = a.hitFields(p)
	if a.extra != nil {
		fields := make([]Field, 0, len(p.hit)+2)
		fields = append(fields, Field{Name: "X-Cache", Values: xCacheValues[srcMemory]})
		fields = append(fields, p.hit...)
		fields = append(fields, Field{Name: "Server-Timing"})
		p.extra = a.extra(fields, t.Body)
	}
	t.Prepared = p
}

// hitFields lists the fields answerTile writes after Server-Timing and
// X-Cache for a 200 in p's stored representation, in its order, when the
// CORS fields do not depend on the request.
func (a *Answers) hitFields(p *prepared) []Field {
	f := make([]Field, 0, 10)
	add := func(name string, v []string) {
		if v != nil {
			f = append(f, Field{Name: name, Values: v})
		}
	}
	if a.cors.Any {
		add("Access-Control-Allow-Origin", allowAny)
		add("Access-Control-Expose-Headers", exposeHeaders)
	}
	add("Vary", p.vary)
	add("Etag", p.etag)
	add("Last-Modified", p.lastModified)
	add("Cache-Control", p.cacheControl)
	add("Content-Type", p.contentType)
	add("Content-Encoding", p.contentEncoding)
	add("Accept-Ranges", acceptRangesBytes)
	add("Content-Length", p.contentLength)
	return slices.Clip(f)
}

// newPrepared is t's header values; Prepare adds what a tile entering the
// memory tier keeps beside them.
func (a *Answers) newPrepared(t *tile.Tile) *prepared {
	p := &prepared{
		contentType:   []string{t.ContentType},
		contentLength: []string{strconv.Itoa(len(t.Body))},
		cacheControl:  a.cacheControl,
	}
	if t.ETag != "" {
		p.etag = []string{t.ETag}
	}
	if !t.LastModified.IsZero() {
		var b [29]byte
		p.lastModified = []string{string(httpspec.AppendDate(b[:0], t.LastModified))}
	}
	if t.ContentEncoding != "" {
		p.contentEncoding = []string{t.ContentEncoding}
	}
	p.vary = a.vary(t.ContentEncoding != "")
	return p
}

// vary is the Vary value of a tile answer.
func (a *Answers) vary(encoded bool) []string {
	switch {
	case encoded && a.cors.Reflect:
		return varyBoth
	case encoded:
		return varyEncoding
	case a.cors.Reflect:
		return varyOrigin
	}
	return nil
}
