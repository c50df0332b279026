package stack

import (
	"fmt"
	"strings"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/shared/s3local"
)

// exampleTile is the tile the printed commands change.
var exampleTile = demotiles.Key(2, 1, 1)

// credentialsEnv is the environment an S3 client needs for the embedded
// endpoint. Checksums "when required" keep newer AWS CLIs from sending
// trailing checksums the endpoint does not need.
func (st *Stack) credentialsEnv() string {
	return fmt.Sprintf("AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s AWS_REQUEST_CHECKSUM_CALCULATION=when_required",
		s3local.DefaultAccessKey, s3local.DefaultSecretKey, st.Region)
}

// uploadCommands are the commands that replace and delete the example tile.
func (st *Stack) uploadCommands() (cp, rm string) {
	obj := "s3://" + st.Tiles.Bucket + "/" + st.Tiles.TilesPrefix + exampleTile
	endpoint := ""
	if st.S3URL != "" {
		endpoint = " --endpoint-url " + st.S3URL
	}
	env := ""
	if st.S3 != nil {
		env = st.credentialsEnv() + " "
	}
	return env + "aws s3 cp my.png " + obj + endpoint, env + "aws s3 rm " + obj + endpoint
}

// hints are the commands the viewer suggests.
func (st *Stack) hints() []viewer.Hint {
	cp, rm := st.uploadCommands()
	return []viewer.Hint{
		{Label: "Replace tile 2/1/1 (any PNG):", Command: cp},
		{Label: "Delete it:", Command: rm},
		{Label: "Then press Refresh: within about a second (SYNC_INTERVAL) it is a MISS with the new bytes, or gone.", Command: ""},
	}
}

// Banner is what `make run` prints: where everything is and how to watch a
// purge go through.
func (st *Stack) Banner() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	tile := st.URL + "/" + exampleTile
	p("")
	p("tilesieve local stack is running")
	p("")
	p("  viewer          %s/", st.URL)
	p("  a tile          %s", tile)
	p("  health          %s/_tilesieve/health", st.URL)
	if st.Tiles.AdminToken != "" {
		p("  admin API       curl -H 'Authorization: Bearer %s' %s/_tilesieve/stats", st.Tiles.AdminToken, st.URL)
	}
	if st.S3 != nil {
		p("  S3 endpoint     %s   bucket %q, tiles under %q, %d demo tiles (%s/{z}/{x}/{y}.png)",
			st.S3URL, st.Tiles.Bucket, st.Tiles.TilesPrefix, st.Seeded, demotiles.Tileset)
		p("  credentials     %s", st.credentialsEnv())
	} else {
		p("  S3              bucket %q, tiles under %q, from the environment (no embedded endpoint, no emulated events)",
			st.Tiles.Bucket, st.Tiles.TilesPrefix)
	}
	p("")
	p("Watch a purge go through:")
	p("  1. curl -sI %s | grep -i -e x-cache -e etag      # MISS, then HIT-MEMORY", tile)
	cp, rm := st.uploadCommands()
	p("  2. %s", cp)
	p("  3. curl -sI %s | grep -i -e x-cache -e etag      # within ~%s: MISS with a new ETag", tile, st.Tiles.SyncInterval)
	p("  4. %s", rm)
	p("  5. curl -sI %s | head -1                          # 404", tile)
	if st.S3 != nil {
		p("  (a demo tile to upload: curl -so my.png %s/%s)", st.URL, demotiles.Key(0, 0, 0))
	}
	p("")
	p("Ctrl-C stops it.")
	return b.String()
}
