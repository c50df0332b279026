package pmtiles

import "encoding/binary"

// AppendHeader appends the HeaderLen-byte encoding of h to b; ParseHeader
// inverts it.
func AppendHeader(b []byte, h Header) []byte {
	at := len(b)
	b = append(b, make([]byte, HeaderLen)...)
	out := b[at:]
	copy(out, Magic)
	out[7] = h.SpecVersion
	for i, v := range []uint64{h.RootOffset, h.RootLength, h.MetadataOffset, h.MetadataLength,
		h.LeafDirectoryOffset, h.LeafDirectoryLength, h.TileDataOffset, h.TileDataLength,
		h.AddressedTilesCount, h.TileEntriesCount, h.TileContentsCount} {
		binary.LittleEndian.PutUint64(out[8+8*i:], v)
	}
	if h.Clustered {
		out[96] = 1
	}
	out[97], out[98], out[99] = byte(h.InternalCompression), byte(h.TileCompression), byte(h.TileType)
	out[100], out[101] = h.MinZoom, h.MaxZoom
	for i, v := range []int32{h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7} {
		binary.LittleEndian.PutUint32(out[102+4*i:], uint32(v))
	}
	out[118] = h.CenterZoom
	binary.LittleEndian.PutUint32(out[119:], uint32(h.CenterLonE7))
	binary.LittleEndian.PutUint32(out[123:], uint32(h.CenterLatE7))
	return b
}

// AppendDirectory appends the uncompressed encoding of entries (sorted by
// TileID) to b, writing an offset that follows the previous entry's bytes
// as 0, as the spec allows; ParseDirectory inverts it.
func AppendDirectory(b []byte, entries []Entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(entries)))
	var last uint64
	for _, e := range entries {
		b = binary.AppendUvarint(b, e.TileID-last)
		last = e.TileID
	}
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.RunLength))
	}
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.Length))
	}
	for i, e := range entries {
		if i > 0 && e.Offset == entries[i-1].Offset+uint64(entries[i-1].Length) {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, e.Offset+1)
		}
	}
	return b
}
