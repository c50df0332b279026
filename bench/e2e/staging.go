package e2e

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
)

// StageRow is one method × latency of section 4.
type StageRow struct {
	Method    string        `json:"method"`
	LatencyMs int           `json:"latency_ms"`
	Elapsed   time.Duration `json:"elapsed"`
	Objects   int           `json:"objects"`
	Bytes     int64         `json:"bytes"`
	Failed    int           `json:"failed"`
}

// StageResult is section 4.
type StageResult struct {
	SmallTiles int        `json:"small_tiles"`
	SmallBytes int64      `json:"small_bytes"`
	LargeBytes int64      `json:"large_bytes"`
	Rows       []StageRow `json:"rows"`
	Ratios     []float64  `json:"ratios"` // sequential / stage.Run, per latency
	LatencyMs  []int      `json:"latency_ms"`
	Targets    []Target   `json:"targets"`
}

// RunStaging stages smallN small tiles and one large object of largeBytes
// with stage.Run and with a sequential GetObject loop (same origin client,
// same disk tier writes), at each latency.
func RunStaging(ctx context.Context, smallN int, largeBytes int64, lats []time.Duration) (StageResult, error) {
	l, err := NewLocalS3()
	if err != nil {
		return StageResult{}, err
	}
	defer l.Close()
	pool := tileset.NewPool(8, 96, 2_000, 8_000, 3)
	keys := make([]string, smallN)
	for i := range keys {
		keys[i] = fmt.Sprintf("stage/small/%d/%d.jpg", i/100, i%100)
	}
	set := tileset.Build(keys, pool)
	if err := tileset.Seed(ctx, l.Client, Bucket, "", set); err != nil {
		return StageResult{}, err
	}
	res := StageResult{SmallTiles: smallN, SmallBytes: set.Bytes(), LargeBytes: largeBytes}
	set = nil
	if largeBytes > 0 {
		_, err := l.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(Bucket), Key: aws.String("stage/archive/big.bin"),
			Body: tileset.NewGenerated(largeBytes, 42), ContentLength: aws.Int64(largeBytes), ContentType: aws.String("application/octet-stream")})
		if err != nil {
			return res, fmt.Errorf("put large object: %w", err)
		}
	}
	o := l.Origin()
	// stage.Run stages objects of any size (an archive is one large object);
	// the loop it is measured against reads them whole too, so its client
	// has no MAX_TILE_BYTES.
	loop := origin.NewWithS3(newS3Client(l.URL(), l.S3), origin.Config{Bucket: Bucket, MaxObjectBytes: -1})
	for _, lat := range lats {
		l.S3.Faults().SetLatency(lat)
		res.LatencyMs = append(res.LatencyMs, int(lat/time.Millisecond))
		var el [2]time.Duration
		for i, method := range []string{"stage.Run", "sequential GetObject loop"} {
			c := o
			if i == 1 {
				c = loop
			}
			row, err := stageOnce(ctx, c, method)
			if err != nil {
				return res, err
			}
			row.LatencyMs = int(lat / time.Millisecond)
			el[i] = row.Elapsed
			res.Rows = append(res.Rows, row)
		}
		res.Ratios = append(res.Ratios, stats.Ratio(float64(el[1]), float64(el[0])))
	}
	l.S3.Faults().SetLatency(0)
	for i, r := range res.Ratios {
		t := Target{What: fmt.Sprintf("stage.Run ≥ 3x faster than a sequential loop (S3 latency %d ms)", res.LatencyMs[i]),
			Want: 3, Got: r, Unit: "x", Higher: true}.Check()
		if i == 0 {
			t = withReason(t, "with no injected latency every GET is CPU work on the same two cores (SDK signing, gofakes3, disk writes), so concurrency has nothing to overlap; at a realistic S3 latency it does")
		}
		res.Targets = append(res.Targets, t)
	}
	return res, nil
}

func stageOnce(ctx context.Context, o *origin.Client, method string) (StageRow, error) {
	dir, err := TempDir("stage")
	if err != nil {
		return StageRow{}, err
	}
	defer os.RemoveAll(dir)
	d, err := disk.Open(disk.Config{Dir: dir, MaxBytes: 2 << 30}, slog.New(slog.DiscardHandler))
	if err != nil {
		return StageRow{}, err
	}
	row := StageRow{Method: method}
	var firstErr error
	start := time.Now()
	switch method {
	case "stage.Run":
		rep := stage.Run(ctx, stage.Config{Prefixes: []string{"stage/"}, Budget: 10 * time.Minute}, o, d, nil)
		row.Objects, row.Bytes, row.Failed = rep.Staged, rep.Bytes, rep.Failed
	default:
		var keys []string
		if err := o.List(ctx, "stage/", func(oi origin.ObjectInfo) bool { keys = append(keys, oi.Key); return true }); err != nil {
			return row, err
		}
		for _, k := range keys {
			t, err := o.Get(ctx, k, "")
			if err == nil {
				err = d.Put(k, t)
			}
			if err != nil {
				row.Failed++
				firstErr = cmp.Or(firstErr, fmt.Errorf("%s: %w", k, err))
				continue
			}
			row.Objects++
			row.Bytes += t.Size()
		}
	}
	row.Elapsed = time.Since(start)
	if row.Failed > 0 {
		return row, fmt.Errorf("%s: %d objects failed (first: %v)", method, row.Failed, firstErr)
	}
	return row, nil
}
