// Package jpegseg makes a JPEG tile stored in a TIFF file a complete JPEG
// stream: the shared tables of the JPEGTables tag go in front of the
// tile's frame, and an application marker tells decoders how to read the
// colour components.
package jpegseg

import (
	"errors"
	"fmt"
)

// Markers used here.
const (
	soi  = 0xD8
	eoi  = 0xD9
	sos  = 0xDA
	app0 = 0xE0
	app4 = 0xEE // APP14
)

// Color says which application marker Merge writes.
type Color int

const (
	// JFIF writes a JFIF APP0 marker: decoders read three components as
	// YCbCr (and one as gray).
	JFIF Color = iota
	// AdobeRGB writes an Adobe APP14 marker with transform 0: decoders
	// read three components as RGB, untransformed.
	AdobeRGB
)

var (
	jfifMarker = []byte{
		0xFF, app0, 0, 16, 'J', 'F', 'I', 'F', 0,
		1, 1, // version 1.01
		0,          // no density units: the numbers are an aspect ratio
		0, 1, 0, 1, // 1:1
		0, 0, // no thumbnail
	}
	adobeMarker = []byte{
		0xFF, app4, 0, 14, 'A', 'd', 'o', 'b', 'e',
		0, 100, // version
		0, 0, 0, 0, // flags
		0, // transform 0: the components are not YCbCr
	}
)

// Tables checks that b is an abbreviated table-specification stream (SOI,
// marker segments, EOI) and returns the segments between SOI and EOI.
func Tables(b []byte) ([]byte, error) {
	if len(b) < 4 || b[0] != 0xFF || b[1] != soi {
		return nil, errors.New("JPEG tables do not start with SOI")
	}
	i := 2
	for i < len(b) {
		if i+2 > len(b) || b[i] != 0xFF {
			return nil, fmt.Errorf("JPEG tables: no marker at %d", i)
		}
		m := b[i+1]
		switch {
		case m == eoi:
			return b[2:i], nil
		case m == 0xFF: // fill byte
			i++
			continue
		case m == soi || m == sos || m >= 0xD0 && m <= 0xD7 || m == 0x01:
			return nil, fmt.Errorf("JPEG tables: marker %#x at %d", m, i)
		}
		if i+4 > len(b) {
			return nil, errors.New("JPEG tables: truncated segment")
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if n < 2 || i+2+n > len(b) {
			return nil, fmt.Errorf("JPEG tables: segment length %d at %d", n, i)
		}
		i += 2 + n
	}
	return nil, errors.New("JPEG tables do not end with EOI")
}

// Merge returns a new complete JPEG stream: SOI, the marker color asks
// for, the table segments (as returned by Tables, may be empty), then tile
// after its own SOI.
func Merge(tables, tile []byte, color Color) ([]byte, error) {
	if len(tile) < 4 || tile[0] != 0xFF || tile[1] != soi {
		return nil, errors.New("JPEG tile does not start with SOI")
	}
	marker := jfifMarker
	if color == AdobeRGB {
		marker = adobeMarker
	}
	out := make([]byte, 0, 2+len(marker)+len(tables)+len(tile)-2)
	out = append(out, 0xFF, soi)
	out = append(out, marker...)
	out = append(out, tables...)
	out = append(out, tile[2:]...)
	return out, nil
}
