// Command floorserve is the Go floor of the end-to-end benchmarks as its own
// process: it loads every file under -dir into a map and serves it with
// e2e/floor on 127.0.0.1:-port until SIGTERM.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/tilesieve/tilesieve/bench/e2e/floor"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

func main() {
	dir := flag.String("dir", "", "directory of tiles (key = path relative to it)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
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
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "floorserve:", err)
		os.Exit(1)
	}
}
