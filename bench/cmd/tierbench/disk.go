package main

import (
	"fmt"
	"strings"

	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

// DiskModes are the sub-benchmarks of shared/tiers/disk's BenchmarkGet: a disk
// hit, then its floor.
var DiskModes = [2]string{"Get", "ReadFileFloor"}

// DiskResult is a run of the disk part: every round's ns/op, B/op and
// allocs/op of each mode.
type DiskResult struct {
	Run
	Rounds  []map[string]map[string]float64 `json:"rounds"` // round → mode → unit → value
	Medians map[string]map[string]float64   `json:"medians"`
	Ratios  []float64                       `json:"ratios"` // every round's Get ÷ floor ns/op
	Targets []e2e.Target                    `json:"targets"`
}

// DiskRatioBound is what a disk hit may cost against reading its file with
// os.ReadFile: no more. Both open, size, read and close the file; the hit
// also checks the header and the body's checksum, and its file has no
// second read to find the end.
const DiskRatioBound = 1.0

var diskUnits = []string{"ns/op", "B/op", "allocs/op"}

// ParseDisk reads the disk part's output.
func ParseDisk(raw []byte, run Run) (DiskResult, error) {
	d := DiskResult{Run: run}
	var err error
	d.Rounds, d.Medians, err = collect(raw, "Get", DiskModes, diskUnits, func(unit string) bool { return unit == "ns/op" })
	if err != nil {
		return d, err
	}
	for _, rd := range d.Rounds {
		d.Ratios = append(d.Ratios, rd[DiskModes[0]]["ns/op"]/rd[DiskModes[1]]["ns/op"])
	}
	d.Targets = []e2e.Target{e2e.Target{What: "a 12 KB disk hit (read and verified) vs os.ReadFile of its file, ns/op (median of same-round ratios)",
		Want: DiskRatioBound, Got: stats.MedianFloat(d.Ratios), Unit: "x"}.Check()}
	return d, nil
}

// RenderDisk is the disk-get section's markdown.
func RenderDisk(d DiskResult) string {
	var b strings.Builder
	d.header(&b, "Disk hits in process")
	fmt.Fprintf(&b, "`BenchmarkGet` (shared/tiers/disk): `Store.Get` of 12 KB tiles, 64 files in turn, all in the page cache, as a "+
		"disk tier's hot tiles are: the file opened, its size read, its header and metadata checked, its body read and its "+
		"checksum verified. Its floor reads the same files with `os.ReadFile`. %d rounds of `-benchtime %s`, each in a "+
		"process of its own, the order alternating by round. A disk hit's cost is mostly its system calls (six: openat, "+
		"fcntl, fstat, two preads, close), each a few microseconds on this virtual machine.\n\n", len(d.Rounds), d.Benchtime)
	b.WriteString("| read | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|\n")
	for _, mode := range DiskModes {
		m := d.Medians[mode]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f |\n", mode, m["ns/op"], m["B/op"], m["allocs/op"])
	}
	fmt.Fprintf(&b, "\nMedians over the rounds. Same-round ratios, Get ÷ floor: %s.\n\n", ratios(d.Ratios))
	targetTable(&b, d.Targets)
	return b.String()
}

// targetTable writes targets, each held to at most its Want.
func targetTable(b *strings.Builder, ts []e2e.Target) {
	b.WriteString("| target | want | got | met |\n|---|---:|---:|---|\n")
	for _, t := range ts {
		met := "**missed**"
		if t.Met {
			met = "met"
		}
		fmt.Fprintf(b, "| %s | ≤ %.2fx | %.2fx | %s |\n", t.What, t.Want, t.Got, met)
	}
	b.WriteString("\n")
}
