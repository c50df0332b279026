//go:build unix

package disk

import "syscall"

// freeBytes is the space available to an unprivileged writer in dir's file
// system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
