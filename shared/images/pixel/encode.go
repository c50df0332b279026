package pixel

import (
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"image/png"
)

// encode encodes the answer once, into a buffer bounded by MaxBytes: an
// answer that would pass it is refused as soon as it does, not truncated.
func encode(_ context.Context, p *Pipeline, job *Job, f *frame) error {
	b := f.img.Bounds()
	w := &boundedBuffer{limit: p.cfg.MaxBytes}
	w.buf = make([]byte, 0, min(p.cfg.MaxBytes, b.Dx()*b.Dy()/2+1024))
	var err error
	switch job.Format {
	case PNG:
		enc := png.Encoder{CompressionLevel: p.cfg.PNGCompression}
		err = enc.Encode(w, f.img)
	default:
		err = jpeg.Encode(w, f.img, &jpeg.Options{Quality: p.cfg.JPEGQuality})
	}
	if errors.Is(err, errOverLimit) {
		return &TooLargeError{What: "encoded answer", Size: int64(w.limit) + 1, Limit: int64(p.cfg.MaxBytes)}
	}
	if err != nil {
		return fmt.Errorf("pixel: encoding: %w", err)
	}
	f.out = w.buf
	return nil
}

var errOverLimit = errors.New("pixel: over the byte limit")

// boundedBuffer collects at most limit bytes and fails the write that would
// pass it.
type boundedBuffer struct {
	buf   []byte
	limit int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > b.limit {
		return 0, errOverLimit
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}
