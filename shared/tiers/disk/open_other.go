//go:build !unix

package disk

import "os"

// openRead opens the file at path for reading.
func openRead(path string) (*os.File, error) { return os.Open(path) }
