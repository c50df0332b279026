package e2e

import (
	"strings"
	"testing"
)

func TestRSSTargetsAndRender(t *testing.T) {
	t.Parallel()
	r := RSSResult{Params: DefaultRSSParams("", "", true),
		Rows: []RSSRow{{Scenario: "404 flood", MemBytes: 32 << 20, Base: 20 << 20, VmHWM: 60 << 20},
			{Scenario: "archive", MemBytes: 32 << 20, Base: 20 << 20, VmHWM: 60 << 20, Extra: 16 << 20, ExtraWhat: "the directory cache"}},
		Hang: &HangResult{SocketsPeak: Sockets{Total: 65}, SocketsAfter: Sockets{Total: 3}, S3InFlightAfter: 2, Recovery: 100, RecoveryOK: 100}}
	r.targets()
	// 60 > 32×1.1+20; 60 ≤ 32×1.1+20+16; 65 ≤ 64+1; 0 requests at once ≤ 65; 2 open > 0; 3 ≤ 65; 100%
	want := []bool{false, true, true, true, false, true, true}
	if len(r.Targets) != len(want) {
		t.Fatalf("got %d targets, want %d", len(r.Targets), len(want))
	}
	for i, w := range want {
		if r.Targets[i].Met != w {
			t.Errorf("target %d (%s): met %v, want %v", i, r.Targets[i].What, r.Targets[i].Met, w)
		}
	}
	var b strings.Builder
	renderRSS(&b, &r)
	for _, s := range []string{rssHeading, "| 404 flood | 32.0 MiB | 20.0 MiB | 55.2 MiB | 60.0 MiB |", "| archive | 32.0 MiB | 20.0 MiB | 71.2 MiB | 60.0 MiB |", "+ the directory cache (16.0 MiB)",
		"- **archive tile past MAX_TILE_BYTES**: an archive whose 62 tiles", "- **distinct first path segments**: 16 clients GET `n{0..4999}/0/0/0.png`", "| 65 / 0 (most at one sample) | 3 / 0 (idle", "**missed**", "- **gzip amplifier**: a gzip tile", "disk tier off.\n\n| scenario"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("render lacks %q:\n%s", s, b.String())
		}
	}

	// More sockets than requests: the miss says the others carried none.
	r.Targets = nil
	r.Hang.SocketsPeak.Total, r.Hang.S3PeakInFlight = 67, 65
	r.targets()
	if s := r.Targets[2]; s.Met || !strings.Contains(s.Reason, "at most 65 requests were open at S3") {
		t.Errorf("sockets target = %+v; want missed, saying 65 requests were open", s)
	}
	if q := r.Targets[3]; !q.Met || q.Got != 65 {
		t.Errorf("requests target = %+v; want met at 65", q)
	}
}
