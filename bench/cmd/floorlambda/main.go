// Command floorlambda is the floor of the invocation benchmarks under the
// Lambda emulator: a minimal Go Lambda (build it as Lambda does, with
// CGO_ENABLED=0 GOOS=linux -tags lambda.norpc) that, at start, reads every
// file under $FLOOR_TILES_DIR and encodes each one's function-URL response
// once (the headers a tile answer carries, the body base64-encoded), then
// answers each invocation with the prepared bytes as an io.Reader, decoding
// only the event's rawPath.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/shared/config"
)

func main() {
	payloads, err := load(os.Getenv("FLOOR_TILES_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorlambda:", err)
		os.Exit(1)
	}
	notFound := []byte(`{"statusCode":404,"headers":{"Content-Type":"text/plain"},"body":"not found"}`)
	lambda.Start(func(_ context.Context, ev *struct {
		RawPath string `json:"rawPath"`
	}) (io.Reader, error) {
		if p, ok := payloads[ev.RawPath]; ok {
			return bytes.NewReader(p), nil
		}
		return bytes.NewReader(notFound), nil
	})
}

// load encodes the answer of every tile under dir, keyed by its URL path.
func load(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, fmt.Errorf("FLOOR_TILES_DIR is not set")
	}
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out["/"+filepath.ToSlash(rel)], err = encode(filepath.Ext(path), body)
		return err
	})
	return out, err
}

// encode is the buffered function-URL answer of a tile, as JSON.
func encode(ext string, body []byte) ([]byte, error) {
	sum := md5.Sum(body)
	ct := mime.TypeByExtension(ext)
	if ct == "" {
		ct = "application/octet-stream"
	}
	return json.Marshal(events.LambdaFunctionURLResponse{
		StatusCode: 200,
		Headers: map[string]string{
			"Content-Type": ct, "Etag": `"` + hex.EncodeToString(sum[:]) + `"`, "Cache-Control": config.DefaultCacheControl,
			"Content-Length": strconv.Itoa(len(body)), "Last-Modified": "Tue, 01 Dec 2026 06:00:00 GMT", "X-Cache": "HIT-MEMORY",
		},
		Body:            base64.StdEncoding.EncodeToString(body),
		IsBase64Encoded: true,
	})
}
