package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
)

// DiskModes are the tile function's invoke modes whose disk hits are timed
// under the emulator.
var DiskModes = []string{"BUFFERED", "RESPONSE_STREAM"}

// EmuDiskSize is the tile of the disk hits: larger than the entry limit of
// a 1 MiB memory tier (128 KiB), so that every answer is the disk tier's.
const EmuDiskSize = 300 << 10

// diskFunction names the disk-hit runs of mode.
func diskFunction(mode string) string {
	if mode == "RESPONSE_STREAM" {
		return "tilesieve disk hits, streaming"
	}
	return "tilesieve disk hits, buffered"
}

// runDisk starts the tile function over a 1 MiB memory tier and times
// sequential disk hits of the EmuDiskSize tile, after the miss that fills
// the disk tier and one warming hit.
func runDisk(ctx context.Context, rie, bootstrap string, env []string, logPath string, ev []byte, o options) (EmuRun, error) {
	var run EmuRun
	emu, cold, err := lambdarie.Start(ctx, rie, bootstrap, env, logPath, ev) // the first answer is the miss
	if err != nil {
		return run, err
	}
	defer emu.Stop()
	run.ColdStart = cold
	p, err := emu.Invoke(ctx, ev)
	if err != nil {
		return run, emu.WithLog(err)
	}
	if err := checkDiskHit(p, EmuDiskSize); err != nil {
		return run, emu.WithLog(err)
	}
	t := EmuTile{Size: sizeName(EmuDiskSize), PayloadBytes: len(p)}
	t0 := time.Now()
	for t.Invokes < o.invokes && time.Since(t0) < o.perRun {
		q, err := emu.Invoke(ctx, ev)
		if err != nil {
			return run, emu.WithLog(err)
		}
		if len(q) != len(p) {
			if err := checkDiskHit(q, EmuDiskSize); err != nil {
				return run, emu.WithLog(err)
			}
		}
		t.Invokes++
	}
	t.Elapsed = time.Since(t0)
	t.PerSec = float64(t.Invokes) / t.Elapsed.Seconds()
	run.Tiles = []EmuTile{t}
	return run, nil
}

// checkDiskHit checks that payload, buffered JSON or the streamed prelude
// and body the emulator passes on, is a disk hit of an n-byte tile.
func checkDiskHit(payload []byte, n int) error {
	if !bytes.Contains(payload, []byte(`"X-Cache":"HIT-DISK"`)) || len(payload) < n {
		return fmt.Errorf("not a disk hit of %d bytes: %d bytes, %.300q", n, len(payload), payload)
	}
	return nil
}

// DiskSummary is one mode's disk hits over the rounds.
type DiskSummary struct {
	Mode    string  `json:"mode"`
	PerSec  float64 `json:"per_sec"`  // median over the rounds
	VsFloor float64 `json:"vs_floor"` // of the medians, to the floor's memory hits of the same tile
}

// summarizeDisk is each mode's median over the rounds.
func (r *EmulatorResult) summarizeDisk() {
	r.DiskSummary = nil
	var floor []float64
	for _, run := range r.Runs {
		if run.Function == "floor" {
			for _, t := range run.Tiles {
				if t.Size == sizeName(EmuDiskSize) {
					floor = append(floor, t.PerSec)
				}
			}
		}
	}
	for _, mode := range DiskModes {
		var per []float64
		for _, run := range r.DiskRuns {
			if run.Function == diskFunction(mode) && len(run.Tiles) > 0 {
				per = append(per, run.Tiles[0].PerSec)
			}
		}
		if len(per) == 0 {
			continue
		}
		s := DiskSummary{Mode: mode, PerSec: median(per)}
		if f := median(floor); f > 0 {
			s.VsFloor = s.PerSec / f
		}
		r.DiskSummary = append(r.DiskSummary, s)
	}
}
