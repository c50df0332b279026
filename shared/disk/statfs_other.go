//go:build !unix

package disk

import "errors"

func freeBytes(string) (int64, error) {
	return 0, errors.New("free space unknown on this platform; set DISK_CACHE_BYTES")
}
