// Package gdalmeta decodes what GDAL writes into a TIFF besides the TIFF
// and GeoTIFF tags: the GDAL_METADATA XML (tag 42112), the GDAL_NODATA
// string (tag 42113) and the structural metadata ("ghost area") of a Cloud
// Optimized GeoTIFF, which follows the file header.
package gdalmeta

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds of the XML parse; GDAL's own files stay far below them.
const (
	MaxXMLBytes = 1 << 20
	MaxItems    = 4096
	maxDepth    = 16
)

// Item is one metadata item: an <Item> of GDAL_METADATA, or a TIFF text
// tag under GDAL's name for it (TIFFTAG_ARTIST, TIFFTAG_COPYRIGHT...).
type Item struct {
	Name   string
	Domain string // "" for the default domain; e.g. "TILING_SCHEME"
	Sample int    // band index, -1 for the whole image
	Role   string // e.g. "offset", "scale", "description"; "" for plain items
	Value  string
}

// Metadata is the metadata items of an image, in the order read.
type Metadata []Item

// Get is the value of the whole-image item name in domain.
func (m Metadata) Get(domain, name string) (string, bool) {
	for _, it := range m {
		if it.Domain == domain && it.Name == name && it.Sample < 0 && it.Role == "" {
			return it.Value, true
		}
	}
	return "", false
}

// ParseMetadata decodes GDAL_METADATA:
//
//	<GDALMetadata><Item name="..." domain="..." sample="0" role="...">value</Item>...</GDALMetadata>
func ParseMetadata(s string) (Metadata, error) {
	if len(s) > MaxXMLBytes {
		return nil, fmt.Errorf("gdalmeta: GDAL_METADATA of %d bytes, over %d", len(s), MaxXMLBytes)
	}
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var (
		items []Item
		cur   *Item
		text  strings.Builder
		depth int
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gdalmeta: GDAL_METADATA: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxDepth {
				return nil, errors.New("gdalmeta: GDAL_METADATA nested too deep")
			}
			if depth == 1 && t.Name.Local != "GDALMetadata" {
				return nil, fmt.Errorf("gdalmeta: GDAL_METADATA root <%s>, want <GDALMetadata>", t.Name.Local)
			}
			if depth == 2 && t.Name.Local == "Item" {
				if len(items) >= MaxItems {
					return nil, fmt.Errorf("gdalmeta: GDAL_METADATA holds more than %d items", MaxItems)
				}
				it, err := item(t)
				if err != nil {
					return nil, err
				}
				cur = &it
				text.Reset()
			}
		case xml.CharData:
			if cur != nil && depth == 2 {
				text.Write(t)
			}
		case xml.EndElement:
			if depth == 2 && cur != nil {
				cur.Value = text.String()
				items = append(items, *cur)
				cur = nil
			}
			depth--
		}
	}
	return items, nil
}

// item reads the attributes of one <Item>.
func item(t xml.StartElement) (Item, error) {
	it := Item{Sample: -1}
	for _, a := range t.Attr {
		switch a.Name.Local {
		case "name":
			it.Name = a.Value
		case "domain":
			it.Domain = a.Value
		case "role":
			it.Role = a.Value
		case "sample":
			n, err := strconv.Atoi(a.Value)
			if err != nil || n < 0 {
				return Item{}, fmt.Errorf("gdalmeta: GDAL_METADATA item %q: sample %q", it.Name, a.Value)
			}
			it.Sample = n
		}
	}
	if it.Name == "" {
		return Item{}, errors.New("gdalmeta: GDAL_METADATA item without a name")
	}
	return it, nil
}

// ParseNoData decodes GDAL_NODATA: a number as text, "nan" and "inf"
// included, with surrounding spaces and NULs ignored.
func ParseNoData(s string) (float64, error) {
	s = strings.Trim(s, " \t\r\n\x00")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("gdalmeta: GDAL_NODATA %q is not a number", s)
	}
	return v, nil
}

// structurePrefix opens the structural metadata of a COG, after the header.
const structurePrefix = "GDAL_STRUCTURAL_METADATA_SIZE="

// MaxStructureBytes bounds the structural metadata; GDAL writes about 150 bytes.
const MaxStructureBytes = 1 << 16

// Structure is the structural metadata GDAL writes after the header of a
// Cloud Optimized GeoTIFF. It is a hint: offsets come from the IFDs.
type Structure struct {
	// Items holds every KEY=VALUE line, in order.
	Items [][2]string
	// RowMajor is BLOCK_ORDER=ROW_MAJOR: tiles of a level stored row by row.
	RowMajor bool
	// Leader is BLOCK_LEADER=SIZE_AS_UINT4: 4 bytes of size before each tile.
	Leader bool
	// Trailer is BLOCK_TRAILER=LAST_4_BYTES_REPEATED.
	Trailer bool
	// MaskInterleaved is MASK_INTERLEAVED_WITH_IMAGERY=YES: each mask tile
	// follows its imagery tile, so that one range read fetches both.
	MaskInterleaved bool
	// IncompatibleEdition is KNOWN_INCOMPATIBLE_EDITION=YES: the file was
	// modified after GDAL wrote it, and the layout above may no longer hold.
	IncompatibleEdition bool
}

// ParseStructure decodes the structural metadata at the start of b (the
// bytes after the file header): ok is false when there is none.
func ParseStructure(b []byte) (s *Structure, ok bool, err error) {
	if !bytes.HasPrefix(b, []byte(structurePrefix)) {
		return nil, false, nil
	}
	rest := b[len(structurePrefix):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 || nl > 32 {
		return nil, true, errors.New("gdalmeta: GDAL structural metadata: no size line")
	}
	var size int
	if _, err := fmt.Sscanf(string(rest[:nl]), "%d bytes", &size); err != nil || size < 0 || size > MaxStructureBytes {
		return nil, true, fmt.Errorf("gdalmeta: GDAL structural metadata: size line %q", rest[:nl])
	}
	body := rest[nl+1:]
	if size > len(body) {
		return nil, true, fmt.Errorf("gdalmeta: GDAL structural metadata of %d bytes, %d at hand", size, len(body))
	}
	s = &Structure{}
	for line := range strings.Lines(string(body[:size])) {
		// GDAL pads the area with spaces, and indents some lines.
		k, v, found := strings.Cut(strings.TrimSpace(line), "=")
		if !found {
			continue
		}
		s.Items = append(s.Items, [2]string{k, v})
		switch k {
		case "BLOCK_ORDER":
			s.RowMajor = v == "ROW_MAJOR"
		case "BLOCK_LEADER":
			s.Leader = v == "SIZE_AS_UINT4"
		case "BLOCK_TRAILER":
			s.Trailer = v == "LAST_4_BYTES_REPEATED"
		case "MASK_INTERLEAVED_WITH_IMAGERY":
			s.MaskInterleaved = v == "YES"
		case "KNOWN_INCOMPATIBLE_EDITION":
			s.IncompatibleEdition = v == "YES"
		}
	}
	return s, true, nil
}
