package stack

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tilesieve/tilesieve/infra/devstack/demoimage"
	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// credentialsEnv is the environment an S3 client needs for the embedded
// endpoint. Checksums "when required" keep newer AWS CLIs from sending
// trailing checksums the endpoint does not need.
func (st *Stack) credentialsEnv() string {
	return fmt.Sprintf("AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s AWS_REQUEST_CHECKSUM_CALCULATION=when_required",
		s3local.DefaultAccessKey, s3local.DefaultSecretKey, st.Region)
}

// Tilesieve is how the banner runs the project's own command: from the
// repository's root, where make run runs, with nothing to install.
const Tilesieve = "go run ./infra/tilesieve"

// UploadDir is the directory the banner's first step downloads a tile into,
// at the example tile's place: uploaded as the demo tileset's directory,
// it replaces that one tile.
const UploadDir = "my-tiles"

// uploadFile is the file the first step writes.
func (st *Stack) uploadFile() string {
	return UploadDir + "/" + strings.TrimPrefix(st.Example, demotiles.Tileset+"/")
}

// tilesieveCommands are the project's commands that replace and delete the
// example tile: tilesieve upload and rm, with the embedded endpoint's
// settings, or against another S3 with the environment's.
func (st *Stack) tilesieveCommands() (upload, rm string) {
	env := ""
	if st.S3 != nil {
		env = fmt.Sprintf("AWS_ENDPOINT_URL=%s S3_FORCE_PATH_STYLE=true AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s ",
			st.S3URL, s3local.DefaultAccessKey, s3local.DefaultSecretKey, st.Region)
	}
	s3 := "s3://" + st.Tiles.Bucket + "/" + st.Tiles.TilesPrefix
	return env + Tilesieve + " upload -quiet " + UploadDir + " " + s3 + demotiles.Tileset,
		env + Tilesieve + " rm " + s3 + st.Example
}

// awsCommands are the AWS CLI's commands for the same.
func (st *Stack) awsCommands() (cp, rm string) {
	obj := "s3://" + st.Tiles.Bucket + "/" + st.Tiles.TilesPrefix + st.Example
	endpoint := ""
	if st.S3URL != "" {
		endpoint = " --endpoint-url " + st.S3URL
	}
	env := ""
	if st.S3 != nil {
		env = st.credentialsEnv() + " "
	}
	return env + "aws s3 cp " + st.uploadFile() + " " + obj + endpoint, env + "aws s3 rm " + obj + endpoint
}

// downloadCommand fetches a PNG to upload: the zoom-0 demo tile, which
// differs from the example tile, saved at the example tile's place in
// UploadDir.
func (st *Stack) downloadCommand() string {
	return "curl -sf --create-dirs -o " + st.uploadFile() + " " + st.URL + "/" + demotiles.Key(0, 0, 0)
}

// headersCommand shows the answer's X-Cache and ETag, and no other header
// that merely names them (Access-Control-Expose-Headers).
func (st *Stack) headersCommand() string {
	return "curl -sI " + st.URL + "/" + st.Example + " | grep -i -e '^x-cache:' -e '^etag:'"
}

// actionCommand is the curl line of a demo action.
func (st *Stack) actionCommand(a viewer.Action) string {
	return fmt.Sprintf("curl -sX POST -H '%s: 1' '%s%s'", a.Header, st.URL, a.Path)
}

// hints are the commands the viewer suggests.
func (st *Stack) hints() []viewer.Hint {
	up, rm := st.tilesieveCommands()
	cp, awsRm := st.awsCommands()
	return []viewer.Hint{
		{Label: "A PNG to upload:", Command: st.downloadCommand()},
		{Label: "Replace tile " + strings.TrimSuffix(st.Example, ".png") + " with it (from the repository's root):", Command: up},
		{Label: "Delete it:", Command: rm},
		{Label: "Or with the AWS CLI:", Command: cp + "\n" + awsRm},
		{Label: "Then press Refresh: within about a second (SYNC_INTERVAL) it is a MISS with the new bytes, or gone.", Command: ""},
	}
}

// IIIFURLs are the URLs of an image the stack serves as IIIF.
type IIIFURLs struct {
	Viewer   string // the IIIF page (viewer.IIIFPage) opening it
	Info     string // its IIIF Image API 3.0 info.json
	Manifest string // its IIIF Presentation 3.0 manifest
}

// IIIFURLs are the URLs of image id, its slashes escaped (%2F) in the
// IIIF paths as the Image API requires.
func (st *Stack) IIIFURLs(id string) IIIFURLs {
	dir := st.URL + "/" + tilename.IIIFDir("3", id)
	return IIIFURLs{Viewer: st.URL + viewer.IIIFPageOf(id), Info: dir + "info.json", Manifest: dir + "manifest.json"}
}

// DemoImageTile is the URL of a stored tile of the demo image, in the
// canonical form of the request a viewer makes for it (the tile of cell
// B3's first square, at full size): answered with the stored JPEG made
// whole, no decode.
func (st *Stack) DemoImageTile() string {
	const x, y, n = 1024, 512, demoimage.TileSize
	return st.URL + "/" + tilename.IIIFDir("3", demoimage.ID) + fmt.Sprintf("%d,%d,%d,%d/%d,%d/0/default.jpg", x, y, n, n, n, n)
}

// Banner is what `make run` prints: where everything is, which S3 it uses,
// how to watch a purge go through (each step a command, in the order they
// run) and how to see every tier.
func (st *Stack) Banner() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	tile := st.URL + "/" + st.Example
	p("")
	p("tilesieve local stack is running")
	p("")
	p("  viewer          %s/", st.URL)
	p("  a tile          %s", tile)
	p("  health          %s/_tilesieve/health", st.URL)
	p("  catalog         %s/_tilesieve/catalog", st.URL)
	if st.DemoImage != "" {
		iiif := st.IIIFURLs(st.DemoImage)
		p("  IIIF viewer     %s (OpenSeadragon, the demo image)", iiif.Viewer)
		p("  IIIF info.json  %s", iiif.Info)
		p("  IIIF tile       %s (a stored tile, sent as stored)", st.DemoImageTile())
		p("  IIIF manifest   %s (Presentation 3.0: open it in Mirador)", iiif.Manifest)
	}
	for _, name := range st.Loaded {
		p("  your tileset    %s/%s.json (TileJSON)  map: %s/?tileset=%s", st.URL, name, st.URL, url.QueryEscape(name))
	}
	for _, id := range st.Images {
		iiif := st.IIIFURLs(id)
		p("  your image      %s (IIIF)  viewer: %s", iiif.Info, iiif.Viewer)
	}
	if st.Tiles.AdminToken != "" {
		p("  admin API       curl -H 'Authorization: Bearer %s' %s/_tilesieve/stats", st.Tiles.AdminToken, st.URL)
	}
	if st.S3 != nil {
		p("  S3              embedded S3 endpoint %s, bucket %q, tiles under %q, %d demo tiles (%s/{z}/{x}/{y}.png)",
			st.S3URL, st.Tiles.Bucket, st.Tiles.TilesPrefix, st.Seeded, demotiles.Tileset)
		p("  credentials     %s", st.credentialsEnv())
		if len(st.IgnoredEnv) > 0 {
			p("  not used        %s from the environment (-embedded=false uses them)", strings.Join(st.IgnoredEnv, ", "))
		}
	} else {
		where := "AWS S3 in " + st.Region
		if st.Tiles.Endpoint != "" {
			where = "the S3 at AWS_ENDPOINT_URL " + st.Tiles.Endpoint
		}
		p("  S3              %s (from the environment), bucket %q, tiles under %q; no emulated events: purges come from that bucket's worker",
			where, st.Tiles.Bucket, st.Tiles.TilesPrefix)
	}
	p("")
	p("Watch a purge go through (run the steps in order, from the repository's root):")
	up, rm := st.tilesieveCommands()
	steps := [][2]string{
		{st.downloadCommand(), "a PNG to upload: the zoom-0 demo tile"},
		{st.headersCommand(), "MISS"},
		{st.headersCommand(), "HIT-MEMORY, the same ETag"},
		{up, ""},
		{st.headersCommand(), fmt.Sprintf("within ~%s: MISS with a new ETag", st.Tiles.SyncInterval)},
		{rm, ""},
		{"curl -sI " + tile + " | head -1", "404"},
	}
	for i, s := range steps {
		if s[1] == "" {
			p("  %d. %s", i+1, s[0])
		} else {
			p("  %d. %-60s # %s", i+1, s[0], s[1])
		}
	}
	cp, awsRm := st.awsCommands()
	p("  With the AWS CLI, step 4 is: %s", cp)
	p("              and step 6 is: %s", awsRm)
	p("")
	p("See the other tiers (the viewer has buttons for these):")
	acts := st.actions()
	p("  HIT-DISK        %s   then fetch a cached tile", st.actionCommand(acts[0]))
	p("  REVALIDATED     fetch a tile cached more than REVALIDATE_AFTER (%s) ago", st.Tiles.RevalidateAfter)
	if len(acts) > 1 {
		p("  STALE           %s   then fetch a tile cached more than %s ago", st.actionCommand(acts[1]), st.Tiles.RevalidateAfter)
	}
	p("")
	p("Ctrl-C stops it.")
	return b.String()
}
