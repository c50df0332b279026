package disk

import "os"

// SetWriteHook replaces how a Store writes its temp files, so a test can
// make the disk fail like a full one.
func SetWriteHook(s *Store, fn func(f *os.File, p []byte) (int, error)) { s.writeFile = fn }

// SetRemoveHook replaces how a Store unlinks files, so a test can hold an
// Unlink in the middle or make it fail.
func SetRemoveHook(s *Store, fn func(path string) error) { s.removeFile = fn }

// SetSyncDirHook replaces how a Store syncs a directory after a rename
// (with Fsync on), so a test can hold a Put there.
func SetSyncDirHook(s *Store, fn func(dir string)) { s.syncDir = fn }

// SetFreeHook replaces how a Store asks the file system for free space.
func SetFreeHook(s *Store, fn func(dir string) (int64, error)) { s.freeSpace = fn }

// FileName exposes where key's file lives, relative to Dir.
func FileName(key string) string { return fileName(key) }

// HeaderLen is the fixed header's length.
const HeaderLen = headerLen
