//go:build !unix

package disk

import "os"

// openRead opens the file at path for reading.
func openRead(path string) (file, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// osFile is an *os.File as a file.
type osFile struct{ *os.File }

func (f osFile) size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
