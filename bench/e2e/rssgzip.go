package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
)

// amplifierTile is a gzip body that decodes to n bytes at about 35 to 1,
// as a vector tile of repeated features may: within the decoder's ratio
// bound (a bomb of zeros is refused before it is decoded), so it is decoded
// for every client that does not accept gzip.
func amplifierTile(n int) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	rng := mrand.New(mrand.NewPCG(6, 19))
	chunk := make([]byte, 1<<10)
	for n > 0 {
		clear(chunk)
		for i := 0; i < len(chunk); i += 80 {
			chunk[i] = byte(rng.Uint32())
		}
		k := min(n, len(chunk))
		zw.Write(chunk[:k])
		n -= k
	}
	zw.Close()
	return out.Bytes()
}

// runGzipAmplifier: a small gzip tile that decodes to decoded bytes is
// stored; rounds of clients without Accept-Encoding ask for it at once, and
// each must get the whole decoded body. The decoded variant is kept in the
// memory tier when it fits its entry limit, else decoded as it is written.
func runGzipAmplifier(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string, decoded int, mem int64) (RSSRow, error) {
	key := "gz/" + strconv.Itoa(decoded) + "/0/0.pbf"
	body := amplifierTile(decoded)
	how := "decoded as it is written"
	if int64(decoded) < EntryLimit(mem) {
		how = "kept decoded in the memory tier"
	}
	row := RSSRow{Scenario: fmt.Sprintf("gzip amplifier: %d clients × %d round(s) without gzip, a %.0f KB tile decoding to %s (%s)",
		p.GzipClients, p.GzipRounds, float64(len(body))/1e3, mib(int64(decoded)), how), MemBytes: mem}
	seeder, err := s3local.New(s3local.Config{})
	if err != nil {
		return row, err
	}
	if _, err := s3local.Put(ctx, seeder.Client(s3URL), Bucket, key, body, "application/vnd.mapbox-vector-tile", "gzip"); err != nil {
		return row, err
	}
	tp, err := startTiles(ctx, "gzip-"+strconv.Itoa(decoded), tmp, bin, logs, s3URL, mem, "MAX_TILE_BYTES="+p.GzipMaxTile)
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	// DisableCompression: the clients send no Accept-Encoding.
	tr := &http.Transport{MaxIdleConnsPerHost: p.GzipClients, MaxIdleConns: p.GzipClients, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	defer tr.CloseIdleConnections()
	var answers tally // whole decoded 200s wanted
	start := time.Now()
	err = inRounds(ctx, p.GzipRounds, p.GzipClients, func(int) {
		resp, err := client.Get(tp.url + "/" + key)
		if err != nil {
			answers.miss(err.Error())
			return
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			answers.miss(err.Error())
		case resp.StatusCode != http.StatusOK || n != int64(decoded) || resp.Header.Get("Content-Encoding") != "":
			answers.miss(fmt.Sprintf("%s, %d bytes, Content-Encoding %q", resp.Status, n, resp.Header.Get("Content-Encoding")))
		default:
			answers.ok.Add(1)
		}
	})
	if err != nil {
		return row, err
	}
	row.Elapsed = time.Since(start)
	row.Requests = p.GzipRounds * p.GzipClients
	row.Answered = fmt.Sprintf("%d whole decoded 200, %d other", answers.ok.Load(), answers.other.Load())
	row.Note = answers.note("first other answer: ")
	return row, tp.finish(&row)
}
