package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// TestURLEventCarriesTheCDNSecret: the header CloudFront adds to origin
// requests (tileserver.CDNSecretHeader) reaches the server from a
// function-URL event, on the tile path and on the admin path (the catalog),
// beside the forwarded host it vouches for.
func TestURLEventCarriesTheCDNSecret(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, headers string
		wantSecret    string
	}{
		{"through the CDN", `{"host":"abc.lambda-url.eu-west-1.on.aws","x-forwarded-host":"d1.cloudfront.net","x-tilesieve-cdn":"stack-uuid"}`, "stack-uuid"},
		{"direct", `{"host":"abc.lambda-url.eu-west-1.on.aws","x-forwarded-host":"evil.example"}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ev urlEvent
			raw := `{"rawPath":"/_tilesieve/catalog","headers":` + tt.headers + `,"requestContext":{"domainName":"abc.lambda-url.eu-west-1.on.aws","http":{"method":"GET"}}}`
			if err := json.Unmarshal([]byte(raw), &ev); err != nil {
				t.Fatal(err)
			}
			var req tileserver.Request
			ev.request(&req)
			if got := req.Header[tileserver.HdrCDNSecret]; got != tt.wantSecret {
				t.Errorf("tile path %s: got %q, want %q", tileserver.CDNSecretHeader, got, tt.wantSecret)
			}
			hr, err := ev.httpRequest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := hr.Header.Get(tileserver.CDNSecretHeader); got != tt.wantSecret {
				t.Errorf("admin path %s: got %q, want %q", tileserver.CDNSecretHeader, got, tt.wantSecret)
			}
			if got := hr.Header.Get("X-Forwarded-Host"); got == "" {
				t.Error("admin path lost X-Forwarded-Host")
			}
		})
	}
}
