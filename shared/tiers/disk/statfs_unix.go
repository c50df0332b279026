//go:build unix

package disk

import "syscall"

// statfs reports the space available to an unprivileged writer in dir's file
// system and the block size it allocates files in.
func statfs(dir string) (free, block int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Bsize), nil
}
