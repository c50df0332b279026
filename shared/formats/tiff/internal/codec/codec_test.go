package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// lzwZeros is a 256x256 tile of zeros as libtiff compresses it with LZW
// (vips black, then vips tiffsave --compression lzw): 424 bytes for 65536.
const lzwZeros = "800020503824160d0784426150b864361d0f8844625138a4562d178c466351b8e4763d1f904864523924964d27944a6552b964b65d2f984c665339a4d66d379c4e6753b9e4f67d3fa05068543a25168d47a4526954ba65369d4fa8546a553aa556ad57ac566b55bae576bd5fb0586c563b2596cd67b45a6d56bb65b6dd6fb85c6e573ba5d6ed77bc5e6f57bbe5f6fd7fc06070583c26170d87c4627158bc66371d8fc86472593ca6572d97cc667359bce6773d9fd068745a3d26974da7d46a755abd66b75dafd86c765b3da6d76db7dc6e775bbde6f77dbfe070785c3e27178dc7e472795cbe67379dcfe8747a5d3ea757add7ec767b5dbee777bddff0787c5e3f2797cde7f47a7d5ebf67b7ddeff87c7e5f3fa7d7edf7fc7e7f5fbfe7f7fcffc0100c0501c0902c0d03c1104c1505c1906c1d07c2108c2509c290ac2d0bc310cc350dc390ec3d0fc4110c4511c4912c4d13c5114c5515c5916c5d17c6118c6519c691ac6d1bc711cc751dc791ec7d1fc8120c8521c8922c8d23c9124c9525c9926c9d27ca128ca529ca92acad2bcb12ccb52dcb92ecbd2fcc130cc531cc932ccd33cd134b868080"

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func zlibOf(b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func TestDecompress(t *testing.T) {
	t.Parallel()
	random := randomBytes(5000, 1)
	// The PackBits example of TIFF 6.0, section 9.
	packed := mustHex("feaa0280002afdaa0380002a22f7aa")
	unpacked := mustHex("aaaaaa80002aaaaaaaaa80002a22aaaaaaaaaaaaaaaaaaaa")
	tests := []struct {
		name   string
		method int
		src    []byte
		n      int
		want   []byte
		err    error
	}{
		{"none", None, random, 5000, random, nil},
		{"none, trailing bytes ignored", None, random, 4000, random[:4000], nil},
		{"none, short", None, random[:10], 11, nil, ErrShort},
		{"packbits", PackBits, packed, len(unpacked), unpacked, nil},
		{"packbits, past the tile", PackBits, packed, len(unpacked) - 1, nil, ErrTooLarge},
		{"packbits, short", PackBits, packed, len(unpacked) + 1, nil, ErrShort},
		{"lzw", LZW, mustHex(lzwZeros), 65536, make([]byte, 65536), nil},
		{"lzw, past the tile", LZW, mustHex(lzwZeros), 65535, nil, ErrTooLarge},
		{"lzw, short", LZW, mustHex(lzwZeros), 65537, nil, ErrShort},
		{"deflate", Deflate, zlibOf(random), 5000, random, nil},
		{"deflate, old code", DeflateOld, zlibOf(random), 5000, random, nil},
		{"deflate, past the tile", Deflate, zlibOf(random), 4999, nil, ErrTooLarge},
		{"deflate, short", Deflate, zlibOf(random), 5001, nil, ErrShort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decompress(tc.method, tc.src, tc.n)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got %d bytes %x..., want %d bytes %x...", len(got), got[:min(8, len(got))], len(tc.want), tc.want[:min(8, len(tc.want))])
			}
		})
	}
}

func TestDecompressDamaged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method int
		src    []byte
	}{
		{"deflate, no header", Deflate, []byte{1, 2, 3}},
		{"deflate, truncated", Deflate, zlibOf(randomBytes(1000, 2))[:100]},
		{"lzw, truncated", LZW, mustHex(lzwZeros)[:100]},
		{"lzw, garbage", LZW, randomBytes(100, 3)},
		{"packbits, literal past the end", PackBits, []byte{5, 1}},
		{"unknown method", 34925, []byte{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Decompress(tc.method, tc.src, 1000); err == nil {
				t.Fatal("got no error, want one")
			}
		})
	}
}

// TestBombAllocatesNoMore checks that data decompressing to far more than
// the tile stops at the tile's size: it allocates about the tile, not the
// bomb.
func TestBombAllocatesNoMore(t *testing.T) {
	bomb := zlibOf(make([]byte, 16<<20)) // 16 MiB of zeros in about 16 KiB
	const tile = 256 * 256 * 3
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decompress(Deflate, bomb, tile)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*tile+256<<10 {
		t.Errorf("got %d bytes allocated, want at most %d", got, 2*tile+256<<10)
	}
	allocs := testing.AllocsPerRun(5, func() { _, _ = Decompress(LZW, mustHex(lzwZeros), 1024) })
	if allocs > 20 {
		t.Errorf("got %v allocations for an LZW bomb, want at most 20", allocs)
	}
}

// diffHorizontal is predictor 2 as an encoder applies it.
func diffHorizontal(b []byte, o binary.ByteOrder, width, spp, bits int) {
	size := bits / 8
	row := width * spp * size
	for r := 0; r < len(b); r += row {
		p := b[r : r+row]
		for i := len(p) - size; i >= spp*size; i -= size {
			switch size {
			case 1:
				p[i] -= p[i-spp]
			case 2:
				o.PutUint16(p[i:], o.Uint16(p[i:])-o.Uint16(p[i-2*spp:]))
			case 4:
				o.PutUint32(p[i:], o.Uint32(p[i:])-o.Uint32(p[i-4*spp:]))
			}
		}
	}
}

func TestUndoHorizontal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		order            binary.ByteOrder
		width, spp, bits int
	}{
		{"8-bit gray", binary.LittleEndian, 7, 1, 8},
		{"8-bit RGBA", binary.LittleEndian, 5, 4, 8},
		{"16-bit II", binary.LittleEndian, 9, 1, 16},
		{"16-bit MM", binary.BigEndian, 9, 1, 16},
		{"16-bit MM RGB", binary.BigEndian, 3, 3, 16},
		{"32-bit", binary.LittleEndian, 4, 2, 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := randomBytes(tc.width*tc.spp*tc.bits/8*3, 4) // three rows
			b := bytes.Clone(want)
			diffHorizontal(b, tc.order, tc.width, tc.spp, tc.bits)
			if err := UndoHorizontal(b, tc.order, tc.width, tc.spp, tc.bits); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("got %x, want %x", b, want)
			}
		})
	}
	if err := UndoHorizontal(make([]byte, 10), binary.LittleEndian, 3, 1, 8); err == nil {
		t.Error("got no error for bytes that are not whole rows, want one")
	}
	if err := UndoHorizontal(make([]byte, 12), binary.LittleEndian, 2, 1, 24); err == nil {
		t.Error("got no error for 24-bit samples, want one")
	}
}

// diffFloat is predictor 3 as libtiff's encoder applies it to one row of
// samples held in the machine's order: bytes split into planes, most
// significant first, then differenced with a stride of spp.
func diffFloat(row []byte, spp, size int, native binary.ByteOrder) []byte {
	n := len(row) / size
	out := make([]byte, len(row))
	for i := range n {
		v := row[i*size : (i+1)*size]
		for k := range size {
			msbFirst := v[k]
			if native == binary.LittleEndian {
				msbFirst = v[size-1-k]
			}
			out[k*n+i] = msbFirst
		}
	}
	for i := len(out) - 1; i >= spp; i-- {
		out[i] -= out[i-spp]
	}
	return out
}

func TestUndoFloat(t *testing.T) {
	t.Parallel()
	const width, rows = 6, 2
	vals := []float32{0, 1.5, -2.25, 1e6, float32(math.NaN()), 3.14159, -1e-3, 100, 42, -42, 7, 8}
	for _, native := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run(native.String(), func(t *testing.T) {
			t.Parallel()
			var enc []byte
			for r := range rows {
				row := make([]byte, 0, width*4)
				for _, v := range vals[r*width : (r+1)*width] {
					row = native.(binary.AppendByteOrder).AppendUint32(row, math.Float32bits(v))
				}
				enc = append(enc, diffFloat(row, 1, 4, native)...)
			}
			if err := UndoFloat(enc, width, 1, 32); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				got := math.Float32frombits(binary.BigEndian.Uint32(enc[4*i:]))
				if math.Float32bits(got) != math.Float32bits(v) {
					t.Errorf("sample %d: got %v, want %v", i, got, v)
				}
			}
		})
	}
}

// FuzzDecompress feeds any bytes to every decoder: errors are fine, a
// panic or output of another size is not.
func FuzzDecompress(f *testing.F) {
	f.Add(uint8(0), mustHex(lzwZeros), uint16(4096))
	f.Add(uint8(1), zlibOf(randomBytes(100, 5)), uint16(100))
	f.Add(uint8(2), mustHex("feaa0280002afdaa0380002a22f7aa"), uint16(24))
	f.Add(uint8(3), []byte{1, 2, 3}, uint16(3))
	methods := []int{LZW, Deflate, PackBits, None}
	f.Fuzz(func(t *testing.T, m uint8, src []byte, n uint16) {
		got, err := Decompress(methods[int(m)%len(methods)], src, int(n))
		if err == nil && len(got) != int(n) {
			t.Fatalf("got %d bytes, want %d", len(got), n)
		}
	})
}
