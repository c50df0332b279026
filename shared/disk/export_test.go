package disk

import "os"

// SetWriteHook replaces how a Store writes its temp files, so a test can
// make the disk fail like a full one.
func SetWriteHook(s *Store, fn func(f *os.File, p []byte) (int, error)) { s.writeFile = fn }

// FileName exposes where key's file lives, relative to Dir.
func FileName(key string) string { return fileName(key) }

// HeaderLen is the fixed header's length.
const HeaderLen = headerLen
