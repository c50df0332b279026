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
	"github.com/tilesieve/tilesieve/shared/origin/transfer"
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
	head, err := o.S3().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(o.Bucket()), Key: aws.String(o.ObjectKey(key)), RequestPayer: o.RequestPayer()})
	if err != nil {
		return nil, "", fmt.Errorf("stage: archive %s: %w", key, err)
	}
	etag, size := aws.ToString(head.ETag), aws.ToInt64(head.ContentLength)
	f, _, err := Pinned(ctx, o, key, etag, size, dir, room)
	if err != nil {
		return nil, "", err
	}
	return f, etag, nil
}

// Pinned is Archive for a version already known (etag, of size bytes): the
// download is pinned with If-Match, so what lands in dir is that version or
// nothing. A copy of it kept in dir is reused without a download. It
// returns the file, open, and its path.
func Pinned(ctx context.Context, o *origin.Client, key, etag string, size int64, dir string, room int64) (*os.File, string, error) {
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
			// A reader of an older copy keeps its open file: unlinking it
			// frees the space once that reader closes it.
			os.Remove(p)
		}
	}
	if f, err := os.Open(path); err == nil {
		if st, err := f.Stat(); err == nil && st.Size() == size {
			return f, path, nil // kept from an earlier process: this version, whole
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
	n, err := transfer.Download(ctx, o.S3(), tmp, &s3.GetObjectInput{Bucket: aws.String(o.Bucket()), Key: aws.String(o.ObjectKey(key)), IfMatch: aws.String(etag), RequestPayer: o.RequestPayer()},
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
	return tmp, path, nil
}

// Files stages whole objects (MBTiles databases) into Dir for readers that
// need a local file, each only if it fits what Room reports free when its
// copy starts.
type Files struct {
	Origin *origin.Client
	Dir    string
	Room   func() (int64, error)
}

// Stage copies key at version etag (size bytes) into f.Dir, or finds it
// there, and returns its path. An object larger than the room is refused
// with an error matching ErrNoRoom before a byte is read.
func (f Files) Stage(ctx context.Context, key, etag string, size int64) (string, error) {
	room, err := f.Room()
	if err != nil {
		return "", fmt.Errorf("stage: %s: %w", key, err)
	}
	file, path, err := Pinned(ctx, f.Origin, key, etag, size, f.Dir, room)
	if err != nil {
		return "", err
	}
	if err := file.Close(); err != nil {
		return "", fmt.Errorf("stage: %s: %w", key, err)
	}
	return path, nil
}
