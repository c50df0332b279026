package ifd

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	tt "github.com/tilesieve/tilesieve/shared/formats/tiff/internal/tifftest"
)

var all Want = func(uint16, uint64) bool { return true }

var testLimits = Limits{MaxIFDs: 8, MaxEntries: 64, MaxBytes: 1 << 20, Window: 64}

// open returns a Reader over b that first holds its first `first` bytes,
// and a count of the reads it makes after that.
func open(t *testing.T, b []byte, first int, lim Limits) (*Reader, *int, error) {
	t.Helper()
	reads := new(int)
	read := func(off, n int64) ([]byte, error) {
		*reads++
		return b[off : off+n], nil
	}
	r, err := NewReader(b[:min(first, len(b))], int64(len(b)), read, lim)
	return r, reads, err
}

func TestParseHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		b       []byte
		big     bool
		order   binary.ByteOrder
		first   uint64
		wantErr string
	}{
		{"classic II", []byte{'I', 'I', 42, 0, 8, 0, 0, 0}, false, binary.LittleEndian, 8, ""},
		{"classic MM", []byte{'M', 'M', 0, 42, 0, 0, 0, 8}, false, binary.BigEndian, 8, ""},
		{"BigTIFF II", []byte{'I', 'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0}, true, binary.LittleEndian, 16, ""},
		{"BigTIFF MM", []byte{'M', 'M', 0, 43, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16}, true, binary.BigEndian, 16, ""},
		{"short", []byte{'I', 'I', 42, 0}, false, nil, 0, "shorter"},
		{"no byte order", []byte{'X', 'X', 42, 0, 8, 0, 0, 0}, false, nil, 0, "byte order"},
		{"version", []byte{'I', 'I', 44, 0, 8, 0, 0, 0}, false, nil, 0, "version 44"},
		{"BigTIFF offset size", []byte{'I', 'I', 43, 0, 4, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0}, false, nil, 0, "offset size"},
		{"BigTIFF short", []byte{'I', 'I', 43, 0, 8, 0, 0, 0}, false, nil, 0, "shorter"},
		{"no IFD", []byte{'I', 'I', 42, 0, 0, 0, 0, 0}, false, nil, 0, "no first IFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := ParseHeader(tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Big != tc.big || h.Order != tc.order || h.First != tc.first {
				t.Errorf("got %+v, want big %v order %v first %d", h, tc.big, tc.order, tc.first)
			}
		})
	}
}

func TestChainBothOrdersAndSizes(t *testing.T) {
	t.Parallel()
	for _, big := range []bool{false, true} {
		for _, order := range []tt.Order{binary.LittleEndian, binary.BigEndian} {
			t.Run(order.String()+map[bool]string{false: "/classic", true: "/big"}[big], func(t *testing.T) {
				t.Parallel()
				f := tt.File{Order: order, Big: big, IFDs: [][]tt.Entry{
					{tt.Ints(256, tt.Short, 640), tt.Ints(258, tt.Short, 8, 8, 8), tt.Text(305, "writer  ")},
					{tt.Ints(256, tt.Long, 320), {Tag: 33550, Type: tt.Double, Floats: []float64{0.5, -2, 0}}},
				}}
				b := f.Bytes()
				r, _, err := open(t, b, len(b), testLimits)
				if err != nil {
					t.Fatal(err)
				}
				ds, err := r.Chain(r.First, all)
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) != 2 {
					t.Fatalf("got %d IFDs, want 2", len(ds))
				}
				if got := ds[0].Uint(256, 0); got != 640 {
					t.Errorf("got width %d, want 640", got)
				}
				bps, _ := ds[0].Get(258)
				if got, _ := bps.Uint(2); bps.Len() != 3 || got != 8 {
					t.Errorf("got bits %v, want 3 values of 8", bps.Floats())
				}
				sw, _ := ds[0].Get(305)
				if got := sw.String(); got != "writer" {
					t.Errorf("got %q, want %q", got, "writer")
				}
				if got := ds[1].Uint(256, 0); got != 320 {
					t.Errorf("got width %d, want 320", got)
				}
				sc, _ := ds[1].Get(33550)
				if got := sc.Floats(); len(got) != 3 || got[0] != 0.5 || got[1] != -2 {
					t.Errorf("got scale %v, want [0.5 -2 0]", got)
				}
			})
		}
	}
}

func TestChainErrors(t *testing.T) {
	t.Parallel()
	entry := []tt.Entry{tt.Ints(256, tt.Short, 1)}
	many := make([]tt.Entry, 100)
	for i := range many {
		many[i] = tt.Ints(uint16(1000+i), tt.Short, 1)
	}
	tests := []struct {
		name    string
		f       tt.File
		wantErr string
		limit   bool
	}{
		{"self loop", tt.File{IFDs: [][]tt.Entry{entry}, Next: []int{0}}, "reached twice", false},
		{"loop of two", tt.File{IFDs: [][]tt.Entry{entry, entry}, Next: []int{1, 0}}, "reached twice", false},
		{"too many IFDs", tt.File{IFDs: [][]tt.Entry{entry, entry, entry, entry, entry, entry, entry, entry, entry}}, "IFDs", true},
		{"too many entries", tt.File{IFDs: [][]tt.Entry{many}}, "entries", true},
		{"first IFD past the end", tt.File{IFDs: [][]tt.Entry{entry}, First: 1 << 20}, "outside the file", false},
		{"first IFD in the header", tt.File{IFDs: [][]tt.Entry{entry}, First: 4}, "outside the file", false},
		{"value past the end", tt.File{IFDs: [][]tt.Entry{{{Tag: 324, Type: tt.Long, Ints: []uint64{1, 2, 3}, At: 1 << 30}}}}, "past the end", false},
		{"count overflows", tt.File{IFDs: [][]tt.Entry{{{Tag: 324, Type: tt.Long8, Ints: []uint64{1}, Count: 1 << 62}}}, Big: true}, "overflows", false},
		{"empty IFD", tt.File{IFDs: [][]tt.Entry{{}}}, "no entries", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.f.Bytes()
			r, _, err := open(t, b, len(b), testLimits)
			if err == nil {
				_, err = r.Chain(r.First, all)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			var le *LimitError
			if got := errors.As(err, &le); got != tc.limit {
				t.Errorf("got LimitError %v, want %v", got, tc.limit)
			}
		})
	}
}

// TestReadsOutsideTheFirstWindow checks that an IFD past the first read is
// read with its window, and that its out-of-line values are read together.
func TestReadsOutsideTheFirstWindow(t *testing.T) {
	t.Parallel()
	blob := make([]byte, 4096)
	f := tt.File{Blobs: [][]byte{blob}, IFDs: [][]tt.Entry{{
		tt.Ints(324, tt.Long, 1, 2, 3, 4, 5, 6, 7, 8),
		tt.Ints(325, tt.Long, 9, 10, 11, 12, 13, 14, 15, 16),
		tt.Ints(258, tt.Short, 8, 8, 8, 8),
		tt.Text(270, strings.Repeat("d", 100)),
	}}}
	b := f.Bytes()
	lim := testLimits
	lim.Window = 16
	r, reads, err := open(t, b, 16, lim)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := r.Chain(r.First, func(tag uint16, _ uint64) bool { return tag != 270 })
	if err != nil {
		t.Fatal(err)
	}
	// One read for the entry count (the window is 16 bytes), one for the
	// entries, one for the three arrays together.
	if *reads != 3 {
		t.Errorf("got %d reads, want 3", *reads)
	}
	offs, _ := ds[0].Get(324)
	if got, _ := offs.Uint(7); got != 8 {
		t.Errorf("got offset %d, want 8", got)
	}
	desc, _ := ds[0].Get(270)
	if desc.Loaded() || desc.Count != 101 {
		t.Errorf("got description loaded %v count %d, want not loaded, 101", desc.Loaded(), desc.Count)
	}
}

func TestByteBudget(t *testing.T) {
	t.Parallel()
	f := tt.File{Blobs: [][]byte{make([]byte, 4096)}, IFDs: [][]tt.Entry{{tt.Ints(324, tt.Long, make([]uint64, 1000)...)}}}
	b := f.Bytes()
	lim := testLimits
	lim.MaxBytes = 2000
	r, _, err := open(t, b, 16, lim)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Chain(r.First, all)
	var le *LimitError
	if !errors.As(err, &le) || le.What != "bytes of IFD data" {
		t.Fatalf("got %v, want a LimitError on bytes", err)
	}
}

func TestValueAccessors(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	tests := []struct {
		name   string
		v      Value
		float  float64
		uint   uint64
		isUint bool
	}{
		{"byte", Value{Type: TypeByte, Raw: []byte{200}, Order: le}, 200, 200, true},
		{"short", Value{Type: TypeShort, Raw: []byte{1, 2}, Order: le}, 513, 513, true},
		{"long MM", Value{Type: TypeLong, Raw: []byte{0, 0, 1, 0}, Order: binary.BigEndian}, 256, 256, true},
		{"long8", Value{Type: TypeLong8, Raw: le.AppendUint64(nil, 1<<40), Order: le}, 1 << 40, 1 << 40, true},
		{"sshort", Value{Type: TypeSShort, Raw: le.AppendUint16(nil, 0xFFFE), Order: le}, -2, 0, false},
		{"rational", Value{Type: TypeRational, Raw: le.AppendUint32(le.AppendUint32(nil, 3), 4), Order: le}, 0.75, 0, false},
		{"float", Value{Type: TypeFloat, Raw: le.AppendUint32(nil, math.Float32bits(1.5)), Order: le}, 1.5, 0, false},
		{"double", Value{Type: TypeDouble, Raw: le.AppendUint64(nil, math.Float64bits(-0.25)), Order: le}, -0.25, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, ok := tc.v.Float(0); !ok || got != tc.float {
				t.Errorf("got Float %v %v, want %v", got, ok, tc.float)
			}
			got, ok := tc.v.Uint(0)
			if ok != tc.isUint || got != tc.uint {
				t.Errorf("got Uint %v %v, want %v %v", got, ok, tc.uint, tc.isUint)
			}
			if _, ok := tc.v.Uint(1); ok {
				t.Errorf("got a second value, want none")
			}
		})
	}
}

// FuzzChain reads any bytes as a TIFF: errors are fine, panics and reads
// past the end are not.
func FuzzChain(f *testing.F) {
	f.Add(tt.File{IFDs: [][]tt.Entry{{tt.Ints(256, tt.Short, 1), tt.Ints(324, tt.Long, 1, 2, 3)}}}.Bytes())
	f.Add(tt.File{Big: true, Order: binary.BigEndian, IFDs: [][]tt.Entry{{tt.Ints(330, tt.Long8, 1, 2)}, {tt.Text(270, "x")}}}.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		read := func(off, n int64) ([]byte, error) {
			if off < 0 || n < 0 || off+n > int64(len(b)) {
				t.Fatalf("read %d+%d past %d bytes", off, n, len(b))
			}
			return b[off : off+n], nil
		}
		r, err := NewReader(b[:min(len(b), 64)], int64(len(b)), read, Limits{MaxIFDs: 16, MaxEntries: 256, MaxBytes: 1 << 16, Window: 32})
		if err != nil {
			return
		}
		ds, _ := r.Chain(r.First, all)
		for _, d := range ds {
			if v, ok := d.Get(330); ok {
				for i := range v.Len() {
					off, _ := v.Uint(i)
					_, _ = r.Chain(off, all)
				}
			}
			for _, v := range d.Entries {
				_ = v.Floats()
				_ = v.String()
			}
		}
	})
}

// TestWindowFollowsTheLastIFD reads a COG-like chain past the first read:
// a large IFD, then smaller ones. Once the first is read, the next read is
// as long as it, and takes all the smaller IFDs at once.
func TestWindowFollowsTheLastIFD(t *testing.T) {
	t.Parallel()
	arrays := func(n int) []tt.Entry {
		return []tt.Entry{tt.Ints(324, tt.Long, make([]uint64, n)...), tt.Ints(325, tt.Long, make([]uint64, n)...)}
	}
	f := tt.File{Blobs: [][]byte{make([]byte, 100<<10)}, IFDs: [][]tt.Entry{arrays(4096), arrays(1024), arrays(256), arrays(64)}}
	b := f.Bytes()
	lim := testLimits
	lim.Window = 4 << 10
	r, reads, err := open(t, b, 16, lim)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := r.Chain(r.First, all)
	if err != nil || len(ds) != 4 {
		t.Fatalf("got %d IFDs, %v", len(ds), err)
	}
	// The first IFD's entries, its arrays, then the three others.
	if *reads != 3 {
		t.Errorf("got %d reads, want 3", *reads)
	}
	if spent := r.Spent(); spent > 16+4<<10+2*32<<10+2*8<<10+2<<10 {
		t.Errorf("got %d bytes read, want about the IFDs' (%d)", spent, 16+4<<10+2*32<<10+2*8<<10+2<<10)
	}
}
