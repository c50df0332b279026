package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
)

// Two of the resource attacks of section 6 besides the gzip amplifier:
// archive tiles past MAX_TILE_BYTES, and many distinct first path segments
// (each a tileset name the archive layer must settle).

// writeOversizeArchive writes NAME.pmtiles into seed: tiles 6/i/0 for i <
// n, all one deduplicated body of size bytes (stored once, so the archive is
// size bytes however many tiles point at it), and a small tile 0/0/0.
func writeOversizeArchive(seed, name string, size, n int) error {
	big := make([]byte, size)
	rand.Read(big)
	small := make([]byte, 512)
	rand.Read(small)
	tiles := []archiveTile{{0, 0, 0, small}}
	for i := range n {
		tiles = append(tiles, archiveTile{6, uint32(i), 0, big})
	}
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return err
	}
	return writePMTiles(filepath.Join(seed, name+".pmtiles"), tiles, pmtiles.TileTypePNG, name)
}

// runOversizeArchive: rounds of clients at once, client i asking for tile
// 6/i/0 of an archive whose tiles are each past MAX_TILE_BYTES; each must be
// refused (502) without the tile being read. Then the archive's small tile
// must still be served.
func runOversizeArchive(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string) (RSSRow, error) {
	row := RSSRow{Scenario: fmt.Sprintf("archive tile past MAX_TILE_BYTES (%s): %d clients × %d rounds, each a distinct tile of one deduplicated %s body",
		p.ArchiveMaxTile, p.ArchiveClients, p.ArchiveRounds, mib(int64(p.ArchiveTileBytes))),
		MemBytes: p.ArchiveMemBytes, Extra: archive.DefaultDirectoryBytes, ExtraWhat: "the directory cache, where refusals are charged"}
	tp, err := startTiles(ctx, "archive", tmp, bin, logs, s3URL, p.ArchiveMemBytes, "MAX_TILE_BYTES="+p.ArchiveMaxTile)
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	tr := &http.Transport{MaxIdleConnsPerHost: p.ArchiveClients, MaxIdleConns: p.ArchiveClients}
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	defer tr.CloseIdleConnections()
	get := func(path string) (int, error) {
		resp, err := client.Get(tp.url + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	var answers tally // 502s wanted
	start := time.Now()
	err = inRounds(ctx, p.ArchiveRounds, p.ArchiveClients, func(i int) {
		code, err := get(fmt.Sprintf("/%s/6/%d/0.png", oversizeArchive, i))
		switch {
		case err != nil:
			answers.miss(err.Error())
		case code == http.StatusBadGateway:
			answers.ok.Add(1)
		default:
			answers.miss(http.StatusText(code))
		}
	})
	if err != nil {
		return row, err
	}
	code, err := get("/" + oversizeArchive + "/0/0/0.png")
	if err != nil {
		return row, fmt.Errorf("small tile: %w", err)
	}
	row.Elapsed = time.Since(start)
	row.Requests = p.ArchiveRounds*p.ArchiveClients + 1
	row.Answered = fmt.Sprintf("%d refused 502, %d other; then the archive's small tile %d", answers.ok.Load(), answers.other.Load(), code)
	row.Note = answers.note("first other answer: ")
	return row, tp.finish(&row)
}

// oversizeArchive names the archive of runOversizeArchive.
const oversizeArchive = "oversize"

// runNames: many distinct first path segments, each a missing tile of a
// name that is no tileset (so the archive layer probes NAME.pmtiles and
// NAME.mbtiles beside the object read), and S3's requests counted.
func runNames(ctx context.Context, p RSSParams, tmp, bin, logs, s3URL string, s3 s3Control) (RSSRow, error) {
	row := RSSRow{Scenario: fmt.Sprintf("%d distinct first path segments", p.Names), MemBytes: p.NamesMemBytes}
	tp, err := startTiles(ctx, "names", tmp, bin, logs, s3URL, p.NamesMemBytes)
	if err != nil {
		return row, err
	}
	defer tp.Stop()
	before, err := s3.stats()
	if err != nil {
		return row, err
	}
	client := HTTPClient()
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var answers tally // 404s wanted
	start := time.Now()
	var wg sync.WaitGroup
	for range p.NamesClients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(p.Names) {
					return
				}
				answers.expect(ctx, client, fmt.Sprintf("%s/n%d/0/0/0.png", tp.url, i), http.StatusNotFound)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	after, err := s3.stats()
	if err != nil {
		return row, err
	}
	row.Elapsed = time.Since(start)
	row.Requests = int(answers.ok.Load() + answers.other.Load())
	row.Answered = fmt.Sprintf("%d 404, %d other; %.2f S3 requests each", answers.ok.Load(), answers.other.Load(),
		float64(after.Requests-before.Requests)/float64(max(1, row.Requests)))
	row.Note = answers.note("first other answer: ")
	return row, tp.finish(&row)
}
