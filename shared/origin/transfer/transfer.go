// Package transfer is the one place the project uses
// aws-sdk-go-v2/feature/s3/manager: its concurrent ranged download (staging
// large tiles and tileset archives) and its concurrent multipart upload (the
// upload command).
//
// The SDK marks feature/s3/manager deprecated in favour of
// feature/s3/transfermanager, which is still pre-1.0. It is used here
// deliberately: what it does is stable and what staging and uploading need,
// and moving to transfermanager once it is 1.0 means changing this file.
package transfer

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Download reads the object in describes into w with concurrent ranged
// GETs of partSize bytes, concurrency at a time, and returns the bytes
// written. Every part carries in's conditions (If-Match pins a version).
// clientOpts apply to each part's request (to capture response metadata).
func Download(ctx context.Context, api *s3.Client, w io.WriterAt, in *s3.GetObjectInput, partSize int64, concurrency int, clientOpts ...func(*s3.Options)) (int64, error) {
	//lint:ignore SA1019 deliberate use of the deprecated manager, see the package doc
	dl := manager.NewDownloader(api, func(dl *manager.Downloader) {
		dl.PartSize = partSize
		dl.Concurrency = concurrency
	})
	//lint:ignore SA1019 deliberate use of the deprecated manager, see the package doc
	return dl.Download(ctx, w, in, manager.WithDownloaderClientOptions(clientOpts...))
}

// NewBuffer is an io.WriterAt over b, for Download into memory.
func NewBuffer(b []byte) *Buffer { return &Buffer{w: manager.NewWriteAtBuffer(b)} }

// Buffer is an in-memory io.WriterAt.
type Buffer struct{ w *manager.WriteAtBuffer }

// WriteAt implements io.WriterAt.
func (b *Buffer) WriteAt(p []byte, off int64) (int, error) { return b.w.WriteAt(p, off) }

// Bytes returns what was written.
func (b *Buffer) Bytes() []byte { return b.w.Bytes() }

// Uploader uploads objects, in concurrent parts when they are large.
type Uploader struct {
	//lint:ignore SA1019 deliberate use of the deprecated manager, see the package doc
	up *manager.Uploader
}

// NewUploader returns an Uploader with parts of partSize bytes (0: the
// SDK's default).
func NewUploader(api *s3.Client, partSize int64) *Uploader {
	//lint:ignore SA1019 deliberate use of the deprecated manager, see the package doc
	return &Uploader{up: manager.NewUploader(api, func(u *manager.Uploader) {
		if partSize > 0 {
			u.PartSize = partSize
		}
	})}
}

// Upload writes the object in describes.
func (u *Uploader) Upload(ctx context.Context, in *s3.PutObjectInput) error {
	//lint:ignore SA1019 deliberate use of the deprecated manager, see the package doc
	_, err := u.up.Upload(ctx, in)
	return err
}
