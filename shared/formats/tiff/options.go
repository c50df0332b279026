package tiff

// Options bound what Open reads and what a File decodes. A zero field takes
// its default, given beside it.
type Options struct {
	// FirstRead is the number of bytes read at the start of the file,
	// where COGs keep every IFD: 64 KiB.
	FirstRead int64
	// IFDRead is the least read at an IFD that lies outside what was read
	// so far (libtiff writes an IFD's arrays right after it): 16 KiB; the
	// read is as long as the IFD before it, with its arrays, when longer.
	IFDRead int64
	// MaxIFDs bounds the IFDs read, SubIFDs included: 64.
	MaxIFDs int
	// MaxIFDBytes bounds the bytes Open reads, first read included: 32 MiB.
	MaxIFDBytes int64
	// MaxTilesPerLevel bounds the tiles of one level: 1<<20.
	MaxTilesPerLevel int
	// MaxSide bounds the width and height of an image: 1<<20.
	MaxSide int
	// MaxTilePixels bounds the pixels of one tile: 1<<22 (2048x2048).
	MaxTilePixels int
	// MaxStoredTileBytes bounds the stored (compressed) bytes of one tile: 16 MiB.
	MaxStoredTileBytes int64
	// MaxTileBytes bounds the decompressed bytes of one tile: 64 MiB.
	MaxTileBytes int64
}

func (o Options) withDefaults() Options {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.FirstRead, 64<<10)
	def(&o.IFDRead, 16<<10)
	defInt(&o.MaxIFDs, 64)
	def(&o.MaxIFDBytes, 32<<20)
	defInt(&o.MaxTilesPerLevel, 1<<20)
	defInt(&o.MaxSide, 1<<20)
	defInt(&o.MaxTilePixels, 1<<22)
	def(&o.MaxStoredTileBytes, 16<<20)
	def(&o.MaxTileBytes, 64<<20)
	return o
}
