package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

var varSources = Var{Name: "SOURCES", Default: "", Doc: "More tilesets from other buckets or prefixes: NAME=s3://BUCKET/PREFIX entries separated by commas or spaces. A request for NAME/… reads BUCKET at PREFIX (empty or ending in /; NAME/3/4/5.pbf is PREFIX3/4/5.pbf), or, when PREFIX is a key ending in .pmtiles or .mbtiles, serves that archive as NAME.pmtiles (NAME.mbtiles). ?requester-pays after an entry reads a requester-pays bucket at the deploy's expense. Every other tileset comes from TILES_BUCKET under TILES_PREFIX; the journal stays there. The worker purges each source from its own bucket's events (give the template the same list)."}

// maxSources bounds SOURCES: each source is a route, an IAM statement and
// an entry of the EventBridge rule, and a Lambda environment holds 4 KB.
const maxSources = 100

// ParseSources reads a SOURCES value: NAME=s3://BUCKET/PREFIX entries
// separated by commas or white space, each optionally followed by
// ?requester-pays. It reports every bad entry in one error, and accepts no
// name twice. LoadTiles and LoadWorker read SOURCES with it.
func ParseSources(s string) ([]sources.Source, error) {
	list, err := parseSources(s)
	if err != nil {
		return nil, fmt.Errorf("config: SOURCES: %w", err)
	}
	return list, nil
}

func parseSources(s string) ([]sources.Source, error) {
	var out []sources.Source
	var errs []error
	seen := map[string]bool{}
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		src, err := parseSource(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", clipEntry(entry), err))
			continue
		}
		if seen[src.Name] {
			errs = append(errs, fmt.Errorf("%q: tileset %s named twice", clipEntry(entry), src.Name))
			continue
		}
		seen[src.Name] = true
		out = append(out, src)
	}
	if len(out) > maxSources {
		errs = append(errs, fmt.Errorf("%d sources: at most %d", len(out), maxSources))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func clipEntry(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func parseSource(entry string) (sources.Source, error) {
	name, loc, ok := strings.Cut(entry, "=")
	if !ok {
		return sources.Source{}, errors.New("want NAME=s3://BUCKET/PREFIX")
	}
	var src sources.Source
	src.Name = name
	if err := checkSourceName(name); err != nil {
		return src, err
	}
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		return src, errors.New("want an s3://BUCKET/PREFIX location")
	}
	if rest, query, hasQuery := strings.Cut(rest, "?"); hasQuery {
		if query != "requester-pays" {
			return src, fmt.Errorf("unknown option ?%s: the only one is ?requester-pays", query)
		}
		src.RequesterPays = true
		loc = rest
	} else {
		loc = rest
	}
	src.Bucket, src.Prefix, _ = strings.Cut(loc, "/")
	if err := checkBucketName(src.Bucket); err != nil {
		return src, err
	}
	switch {
	case src.ArchiveExt() != "":
		if err := tile.ValidateKey(src.Prefix); err != nil {
			return src, fmt.Errorf("archive key %q: %w", src.Prefix, err)
		}
	case src.Prefix == "":
	case !strings.HasSuffix(src.Prefix, "/"):
		return src, fmt.Errorf("prefix %q: want a directory ending in / (or an archive key ending in %s)", src.Prefix, strings.Join(tilename.SingleFileExts, " or "))
	default:
		if err := tile.ValidatePrefix(src.Prefix); err != nil {
			return src, fmt.Errorf("prefix %q: %w", src.Prefix, err)
		}
	}
	return src, nil
}

// checkSourceName keeps a name one URL segment that sources.Name gives
// back for each of its keys (NAME/…, NAME.json, NAME.pmtiles).
func checkSourceName(name string) error {
	if name == "" || len(name) > 100 {
		return errors.New("want a tileset name of 1 to 100 characters before =")
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && (r == '-' || r == '_' || r == '.'))
		if !ok {
			return fmt.Errorf("tileset name %q: want letters, digits, and -, _ or . after the first", name)
		}
	}
	if strings.HasSuffix(name, ".") {
		return fmt.Errorf("tileset name %q must not end in a dot", name)
	}
	for _, ext := range append([]string{tilename.TileJSONExt}, tilename.SingleFileExts...) {
		if strings.HasSuffix(name, ext) {
			return fmt.Errorf("tileset name %q must not end in %s", name, ext)
		}
	}
	return nil
}

// checkBucketName applies S3's general-purpose bucket naming rules.
func checkBucketName(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket %q: want 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		edge := i == 0 || i == len(b)-1
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || !edge && (c == '-' || c == '.')) {
			return fmt.Errorf("bucket %q: want lower-case letters, digits, . and -, starting and ending with a letter or digit", b)
		}
	}
	if strings.Contains(b, "..") {
		return fmt.Errorf("bucket %q: no two dots in a row", b)
	}
	return nil
}

// sources reads SOURCES against the common settings c: a source in
// TILES_BUCKET must not serve the journal.
func (r *reader) sources(c Common) []sources.Source {
	s, ok := r.lookup(varSources.Name)
	if !ok {
		return nil
	}
	list, err := parseSources(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("SOURCES: %w", err))
		return nil
	}
	for _, src := range list {
		if src.Bucket == c.Bucket && src.ArchiveExt() == "" && strings.HasPrefix(c.JournalPrefix, src.Prefix) {
			r.fail("SOURCES: %s: s3://%s/%s holds JOURNAL_PREFIX=%q: the journal would be served as tiles", src.Name, src.Bucket, src.Prefix, c.JournalPrefix)
		}
	}
	return list
}
