// Command floorserve is the Go floor of the end-to-end benchmarks as its own
// process: it loads every file under -dir into a map and serves it with
// e2e/floor on 127.0.0.1:-port until SIGTERM. With -timeouts its
// http.Server has the local tile server's timeouts (functions/tiles/local.go;
// the write timeout sized from the default MAX_TILE_BYTES), so that a
// comparison with it leaves out what they cost.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/floor"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/config"
)

func main() {
	dir := flag.String("dir", "", "directory of tiles (key = path relative to it)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	timeouts := flag.Bool("timeouts", false, "the local tile server's read-header, write and idle timeouts")
	flag.Parse()
	set, err := tileset.ReadDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorserve:", err)
		os.Exit(1)
	}
	tiles := set.Map()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorserve:", err)
		os.Exit(1)
	}
	fmt.Printf("listening http://%s tiles=%d\n", ln.Addr(), len(tiles))
	srv := &http.Server{Handler: floor.New(tiles)}
	if *timeouts {
		// The write timeout as the tile function sizes it from its default
		// settings.
		cfg, err := config.LoadTiles(func(k string) string { return map[string]string{"TILES_BUCKET": "floor"}[k] })
		if err != nil {
			fmt.Fprintln(os.Stderr, "floorserve:", err)
			os.Exit(1)
		}
		srv.ReadHeaderTimeout, srv.WriteTimeout, srv.IdleTimeout = 10*time.Second, cfg.WriteTimeout(), 120*time.Second
	}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "floorserve:", err)
		os.Exit(1)
	}
}
