// Package rangeio plans and makes the range reads that fetch a set of byte
// ranges of one object: ranges close together are read in one request, and
// a few requests run at a time.
package rangeio

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// Range is a byte range a caller wants, with an ID of its choosing.
type Range struct {
	Off, N int64
	ID     int
}

// Read is one range read, covering one or more Ranges.
type Read struct {
	Off, N int64
	Ranges []Range
}

// Plan sorts ranges by offset and merges those at most gap bytes apart into
// reads of at most maxSpan bytes; a range longer than maxSpan is read alone.
// Overlapping and repeated ranges share a read.
func Plan(ranges []Range, gap, maxSpan int64) []Read {
	slices.SortFunc(ranges, func(a, b Range) int { return cmp.Compare(a.Off, b.Off) })
	var reads []Read
	for _, r := range ranges {
		if len(reads) > 0 {
			last := &reads[len(reads)-1]
			end := max(last.Off+last.N, r.Off+r.N)
			if r.Off-(last.Off+last.N) <= gap && end-last.Off <= maxSpan {
				last.N = end - last.Off
				last.Ranges = append(last.Ranges, r)
				continue
			}
		}
		reads = append(reads, Read{r.Off, r.N, []Range{r}})
	}
	return reads
}

// ReadFunc reads exactly n bytes at off.
type ReadFunc func(ctx context.Context, off, n int64) ([]byte, error)

// Do makes reads, parallel at most at a time, and hands each Range its
// bytes through got (one call at a time; the bytes are a slice of the
// read, capped to the range). The first error cancels the reads not yet
// made and is returned; count and bytes are the reads made.
func Do(ctx context.Context, reads []Read, parallel int, read ReadFunc, got func(Range, []byte)) (count int, bytes int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex // guards count, bytes, err and the calls to got
		wg    sync.WaitGroup
		slots = make(chan struct{}, max(1, parallel))
	)
	for _, rd := range reads {
		slots <- struct{}{}
		if ctx.Err() != nil {
			break // a read failed, or the caller gave up
		}
		wg.Go(func() {
			defer func() { <-slots }()
			b, rerr := read(ctx, rd.Off, rd.N)
			mu.Lock()
			defer mu.Unlock()
			count++
			bytes += rd.N
			if rerr != nil {
				if err == nil {
					err = rerr
					cancel()
				}
				return
			}
			for _, r := range rd.Ranges {
				lo := r.Off - rd.Off
				got(r, b[lo:lo+r.N:lo+r.N])
			}
		})
	}
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return count, bytes, err
}
