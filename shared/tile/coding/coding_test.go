package coding_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/tilesieve/tilesieve/shared/tile/coding"
)

func encode(t testing.TB, enc string, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch enc {
	case coding.Gzip:
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
	case coding.Brotli:
		zw := brotli.NewWriter(&out)
		zw.Write(b)
		zw.Close()
	case coding.Zstd:
		zw, _ := zstd.NewWriter(&out)
		zw.Write(b)
		zw.Close()
	default:
		return b
	}
	return out.Bytes()
}

// TestDecodeWithinBound: every coding decodes to what was encoded, and
// refuses output past its bound with ErrTooLarge.
func TestDecodeWithinBound(t *testing.T) {
	t.Parallel()
	plain := bytes.Repeat([]byte("tile bytes "), 1000)
	for _, enc := range []string{coding.Identity, coding.Gzip, coding.Brotli, coding.Zstd, "x-gzip", "GZIP"} {
		c, _ := coding.Canonical(enc)
		stored := encode(t, c, plain)
		got, err := coding.Decode(stored, enc, int64(len(plain)))
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%q: got %d bytes, %v; want the %d encoded", enc, len(got), err, len(plain))
		}
		if _, err := coding.Decode(stored, enc, int64(len(plain)-1)); !errors.Is(err, coding.ErrTooLarge) {
			t.Errorf("%q one byte under the size: got %v, want ErrTooLarge", enc, err)
		}
	}
}

// TestDecodeRefuses: a coding this package does not decode, and bytes that
// are not a stream of their coding, are refused with their own errors.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	if _, err := coding.Decode([]byte("x"), "compress", 100); !errors.Is(err, coding.ErrUnsupported) {
		t.Errorf("unknown coding: got %v, want ErrUnsupported", err)
	}
	for _, enc := range []string{coding.Gzip, coding.Zstd} {
		if _, err := coding.Decode([]byte("not a stream\x01\x00\x00\x00"), enc, 100); !errors.Is(err, coding.ErrInvalid) {
			t.Errorf("%s garbage: got %v, want ErrInvalid", enc, err)
		}
	}
	if coding.Decodable("") || coding.Decodable("compress") || !coding.Decodable("br") {
		t.Error("Decodable: want false for identity and unknown codings, true for br")
	}
}

// TestGzipTrailerRefusedFirst: a gzip stream whose trailer (ISIZE) says it
// passes the bound is refused before a byte is decoded, whatever follows.
// Not parallel: it counts allocations.
func TestGzipTrailerRefusedFirst(t *testing.T) {
	stored := encode(t, coding.Gzip, make([]byte, 1<<20))
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := coding.Decode(stored, coding.Gzip, 1<<10); !errors.Is(err, coding.ErrTooLarge) {
			t.Fatalf("got %v, want ErrTooLarge", err)
		}
	})
	if allocs > 10 {
		t.Errorf("refusal allocated %v times: the stream was decoded", allocs)
	}
}

// TestMeasure: a body within keep is returned; a larger one only counted;
// past limit refused.
func TestMeasure(t *testing.T) {
	t.Parallel()
	plain := bytes.Repeat([]byte{1, 2, 3, 4}, 4096)
	for _, enc := range []string{coding.Gzip, coding.Brotli, coding.Zstd} {
		stored := encode(t, enc, plain)
		if b, n, err := coding.Measure(enc, stored, 1<<20, 1<<20); err != nil || n != int64(len(plain)) || !bytes.Equal(b, plain) {
			t.Errorf("%s kept: got %d bytes, n %d, %v", enc, len(b), n, err)
		}
		if b, n, err := coding.Measure(enc, stored, 100, 1<<20); err != nil || b != nil || n != int64(len(plain)) {
			t.Errorf("%s counted: got %d bytes, n %d, %v; want none and the size", enc, len(b), n, err)
		}
		if _, _, err := coding.Measure(enc, stored, 100, 1000); !errors.Is(err, coding.ErrTooLarge) {
			t.Errorf("%s past the limit: got %v, want ErrTooLarge", enc, err)
		}
	}
}

// FuzzDecode: no input makes a decoder panic or return more than its bound.
func FuzzDecode(f *testing.F) {
	for _, enc := range []string{coding.Gzip, coding.Brotli, coding.Zstd} {
		f.Add(enc, encode(f, enc, []byte("seed tile")))
	}
	f.Add("identity", []byte("plain"))
	f.Fuzz(func(t *testing.T, enc string, b []byte) {
		const bound = 1 << 16
		out, err := coding.Decode(b, enc, bound)
		if err == nil && len(out) > bound {
			t.Fatalf("decoded %d bytes past the bound of %d", len(out), bound)
		}
		coding.Measure(enc, b, 100, bound)
	})
}
