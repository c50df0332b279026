package tiff

import (
	"errors"
	"fmt"
)

// FormatError reports a file that is not a valid TIFF, or is damaged or
// truncated.
type FormatError string

func (e FormatError) Error() string { return "tiff: invalid file: " + string(e) }

// UnsupportedError reports a valid TIFF that uses a feature this package
// does not read.
type UnsupportedError struct {
	// Feature says what is not supported, e.g. "compression 6 (old-style JPEG)".
	Feature string
	// Compression is the Compression tag's value when it is what is not
	// supported, 0 otherwise.
	Compression Compression
}

func (e *UnsupportedError) Error() string { return "tiff: unsupported: " + e.Feature }

// LimitError reports a count over one of the bounds of Options.
type LimitError struct {
	What         string // e.g. "image width", "stored tile bytes"
	Value, Limit uint64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("tiff: %s %d over the limit %d", e.What, e.Value, e.Limit)
}

var (
	// ErrNotTiled is a stripped image: described by Open, but neither read
	// by tile nor accepted by Validate.
	ErrNotTiled = errors.New("tiff: not tiled")
	// ErrNotPyramidal is a large image without reduced-resolution levels.
	ErrNotPyramidal = errors.New("tiff: not pyramidal")
	// ErrNotGeoreferenced is a file without GeoTIFF georeferencing.
	ErrNotGeoreferenced = errors.New("tiff: not georeferenced")
)

// readError marks an error of the RangeReader, so that it is passed on as
// it is rather than taken for a malformed file.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// IsReadError reports whether err is the RangeReader's (the object could
// not be read), not the file's.
func IsReadError(err error) bool {
	var re *readError
	return errors.As(err, &re)
}

// unsupported is an UnsupportedError for a feature.
func unsupported(format string, args ...any) error {
	return &UnsupportedError{Feature: fmt.Sprintf(format, args...)}
}

// formatErr is a FormatError from a format string.
func formatErr(format string, args ...any) error {
	return FormatError(fmt.Sprintf(format, args...))
}
