package variant

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
)

func TestIdentityETag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`"abc"`: `"abc-identity"`, `W/"abc"`: `W/"abc-identity"`, `abc`: `"abc-identity"`} {
		got := ETag(in)
		if got != want {
			t.Errorf("ETag(%q) = %q, want %q", in, got, want)
		}
		if httpspec.MatchETag(in, got, true) {
			t.Errorf("%q and its decoded representation's %q match weakly", in, got)
		}
	}
}
