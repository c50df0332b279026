//go:build !unix

package disk

import "errors"

func statfs(string) (free, block int64, err error) {
	return 0, 0, errors.New("disk: free space unknown on this platform; set MaxBytes")
}
