// Package gdalmd decodes what GDAL writes into a TIFF besides the TIFF and
// GeoTIFF tags: the GDAL_METADATA XML (tag 42112), the GDAL_NODATA string
// (tag 42113) and the structural metadata ("ghost area") of a Cloud
// Optimized GeoTIFF, which follows the file header.
package gdalmd

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

// Item is one <Item> of GDAL_METADATA.
type Item struct {
	Name   string
	Domain string // "" for the default domain
	Sample int    // band index, -1 for the dataset
	Role   string // e.g. "offset", "scale", "description"; "" for plain items
	Value  string
}

// ParseMetadata decodes GDAL_METADATA:
//
//	<GDALMetadata><Item name="..." domain="..." sample="0" role="...">value</Item>...</GDALMetadata>
func ParseMetadata(s string) ([]Item, error) {
	if len(s) > MaxXMLBytes {
		return nil, fmt.Errorf("GDAL_METADATA of %d bytes, over %d", len(s), MaxXMLBytes)
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
			return nil, fmt.Errorf("GDAL_METADATA: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxDepth {
				return nil, errors.New("GDAL_METADATA nested too deep")
			}
			if depth == 1 && t.Name.Local != "GDALMetadata" {
				return nil, fmt.Errorf("GDAL_METADATA root <%s>, want <GDALMetadata>", t.Name.Local)
			}
			if depth == 2 && t.Name.Local == "Item" {
				if len(items) >= MaxItems {
					return nil, fmt.Errorf("GDAL_METADATA holds more than %d items", MaxItems)
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
				return Item{}, fmt.Errorf("GDAL_METADATA item %q: sample %q", it.Name, a.Value)
			}
			it.Sample = n
		}
	}
	if it.Name == "" {
		return Item{}, errors.New("GDAL_METADATA item without a name")
	}
	return it, nil
}

// ParseNoData decodes GDAL_NODATA: a number as text, "nan" and "inf"
// included, with surrounding spaces and NULs ignored.
func ParseNoData(s string) (float64, error) {
	s = strings.Trim(s, " \t\r\n\x00")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("GDAL_NODATA %q is not a number", s)
	}
	return v, nil
}

// ghostPrefix opens the structural metadata of a COG, after the header.
const ghostPrefix = "GDAL_STRUCTURAL_METADATA_SIZE="

// MaxGhostBytes bounds the structural metadata; GDAL writes about 150 bytes.
const MaxGhostBytes = 1 << 16

// ParseGhost decodes the structural metadata at the start of b (the bytes
// after the file header): ok is false when there is none. Keys are
// returned in order with their values, as KEY=VALUE lines hold them.
func ParseGhost(b []byte) (kv [][2]string, ok bool, err error) {
	if !bytes.HasPrefix(b, []byte(ghostPrefix)) {
		return nil, false, nil
	}
	rest := b[len(ghostPrefix):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 || nl > 32 {
		return nil, true, errors.New("GDAL structural metadata: no size line")
	}
	var size int
	if _, err := fmt.Sscanf(string(rest[:nl]), "%d bytes", &size); err != nil || size < 0 || size > MaxGhostBytes {
		return nil, true, fmt.Errorf("GDAL structural metadata: size line %q", rest[:nl])
	}
	body := rest[nl+1:]
	if size > len(body) {
		return nil, true, fmt.Errorf("GDAL structural metadata of %d bytes, %d at hand", size, len(body))
	}
	for line := range strings.Lines(string(body[:size])) {
		line = strings.TrimRight(line, "\r\n ")
		if line == "" {
			continue
		}
		k, v, found := strings.Cut(line, "=")
		if !found {
			continue // GDAL pads the area with spaces
		}
		kv = append(kv, [2]string{k, v})
	}
	return kv, true, nil
}
