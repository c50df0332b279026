// Command floorserve is the Go floor of the end-to-end benchmarks as its own
// process: it loads every file under -dir into a map and serves it with
// e2e/floor on 127.0.0.1:-port until SIGTERM.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tilesieve/tilesieve/bench/e2e/floor"
)

func main() {
	dir := flag.String("dir", "", "directory of tiles (key = path relative to it)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	flag.Parse()
	tiles := map[string][]byte{}
	err := filepath.WalkDir(*dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*dir, p)
		tiles[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorserve:", err)
		os.Exit(1)
	}
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
