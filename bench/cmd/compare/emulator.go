package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
)

// emuSizes are the tiles invoked under the emulator, as in the invocation
// section.
var emuSizes = []int{30 << 10, 300 << 10}

// EmuPart is the tile function's bootstrap of each tree under the Lambda
// Runtime Interface Emulator.
type EmuPart struct {
	Date       time.Time        `json:"date"`
	Build      string           `json:"build"`
	Rounds     int              `json:"rounds"`
	MaxInvokes int              `json:"max_invokes"`
	MaxTime    time.Duration    `json:"max_time"`
	Bootstrap  map[string]int64 `json:"bootstrap_bytes"` // by side
	// ColdStart is each round's time from starting the emulator to the
	// first answer (a miss fetched from S3), in ms.
	ColdStart e2e.Sides  `json:"cold_start_ms"`
	Pairs     []e2e.Pair `json:"pairs"` // invocations/s of each tile's memory hits
}

func sizeName(n int) string { return strconv.Itoa(n>>10) + "KB" }

// runEmulator runs each side's bootstrap under aws-lambda-rie in o.rounds
// rounds, in the order e2e.SidesInRound gives: each run starts the
// emulator, times its first answer, then times sequential memory hits of
// each tile (lambdarie's TimeHits, as the invocation section does), and
// stops it. S3 is in this process on loopback; the event is the after
// tree's function-URL fixture.
func runEmulator(ctx context.Context, after Tree, bootstraps map[string]string, tmp string, o options) (EmuPart, error) {
	part := EmuPart{Build: lambdarie.BuildCommand(), Rounds: o.rounds, MaxInvokes: o.emuInvokes, MaxTime: o.emuTime, Bootstrap: map[string]int64{}}
	rie, err := exec.LookPath("aws-lambda-rie")
	if err != nil {
		return part, errors.New("aws-lambda-rie not on PATH: run make tools")
	}
	for side, bin := range bootstraps {
		fi, err := os.Stat(bin)
		if err != nil {
			return part, err
		}
		part.Bootstrap[side] = fi.Size()
	}
	s3srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		return part, err
	}
	s3URL, stopS3, err := e2e.Serve(s3srv.Handler())
	if err != nil {
		return part, err
	}
	defer stopS3()
	template, err := os.ReadFile(filepath.Join(after.Dir, "events", "url-get-tile.json"))
	if err != nil {
		return part, err
	}
	evs := map[int][]byte{}
	for _, n := range emuSizes {
		key := "bench/" + sizeName(n) + ".png"
		if _, err := s3local.Put(ctx, s3srv.Client(s3URL), "tiles", key, tilegen.Incompressible(n), "image/png", ""); err != nil {
			return part, err
		}
		if evs[n], err = lambdarie.WithPath(template, "/"+key); err != nil {
			return part, err
		}
	}
	pairs := make([]e2e.Pair, len(emuSizes))
	for i, n := range emuSizes {
		pairs[i] = e2e.Pair{What: "memory hit " + sizeName(n), Unit: "invocations/s"}
	}
	for round := range o.rounds {
		logf("emulator round %d/%d", round+1, o.rounds)
		for _, side := range e2e.SidesInRound(round) {
			env := append(e2e.S3Env(s3URL), "TILES_BUCKET=tiles", "TILES_PREFIX=",
				"DISK_CACHE_DIR="+filepath.Join(tmp, fmt.Sprintf("emu-disk-%s-%d", side, round)), "DISK_CACHE_BYTES=64MiB")
			emu, cold, err := lambdarie.Start(ctx, rie, bootstraps[side], env, filepath.Join(tmp, fmt.Sprintf("emu-%s-%d.log", side, round)), evs[emuSizes[0]])
			if err != nil {
				return part, fmt.Errorf("%s, round %d: %w", side, round+1, err)
			}
			part.ColdStart.Add(side, float64(cold)/float64(time.Millisecond))
			for i, n := range emuSizes {
				h, err := emu.TimeHits(ctx, evs[n], n, o.emuInvokes, o.emuTime)
				if err != nil {
					emu.Stop()
					return part, fmt.Errorf("%s, round %d, %s: %w", side, round+1, sizeName(n), err)
				}
				pairs[i].Values.Add(side, h.PerSec)
			}
			emu.Stop()
		}
	}
	part.Pairs = pairs
	part.Date = time.Now().UTC()
	return part, nil
}
