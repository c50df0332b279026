package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/transfer"
)

// ErrNoRoom is an archive larger than the room it may take.
var ErrNoRoom = errors.New("stage: archive does not fit")

// Archive copies the tileset archive at key (NAME.pmtiles, a tile key under
// TILES_PREFIX) whole into dir, pinned to one version, through the same
// concurrent ranged download as large objects, and returns the file (open,
// for ranged reads) and the version's ETag. The file is named by the
// version, so a process restarted over the same dir finds a current copy
// and downloads nothing; copies of other versions are removed. Nothing is
// left behind unless the whole archive arrived. room bounds its size.
func Archive(ctx context.Context, o *origin.Client, key, dir string, room int64) (*os.File, string, error) {
	head, err := o.S3().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(o.Bucket()), Key: aws.String(o.ObjectKey(key))})
	if err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	etag, size := aws.ToString(head.ETag), aws.ToInt64(head.ContentLength)
	if size > room {
		return nil, "", fmt.Errorf("%w: %s is %d bytes, %d free", ErrNoRoom, key, size, room)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	sum := sha256.Sum256([]byte(key + "\x00" + etag))
	base := strings.ReplaceAll(key, "/", "_")
	path := filepath.Join(dir, base+"."+hex.EncodeToString(sum[:8]))
	old, _ := filepath.Glob(filepath.Join(dir, base+".*"))
	for _, p := range old {
		if p != path {
			os.Remove(p)
		}
	}
	if f, err := os.Open(path); err == nil {
		if st, err := f.Stat(); err == nil && st.Size() == size {
			return f, etag, nil // kept from an earlier process: this version, whole
		}
		f.Close()
	}
	tmp, err := os.CreateTemp(dir, ".archive-*")
	if err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := transfer.Download(ctx, o.S3(), tmp, &s3.GetObjectInput{Bucket: aws.String(o.Bucket()), Key: aws.String(o.ObjectKey(key)), IfMatch: aws.String(etag)},
		DefaultPartSize, partConcurrency)
	if err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	if n != size {
		return nil, "", fmt.Errorf("stage: archive %s: got %d bytes, want %d", key, n, size)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	keep = true
	return tmp, etag, nil
}
