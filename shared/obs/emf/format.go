package emf

import (
	"encoding/json"
	"math"
	"strconv"
)

// entry is one metric's value in one line.
type entry struct {
	name  string
	unit  Unit
	num   float64 // counters and gauges
	isInt bool
	hist  *histogram
}

// appendDocuments appends g's lines (none when it has nothing to say; more
// than one when it has more metrics than a directive may name).
func (g *Group) appendDocuments(buf []byte, cfg Config, ts int64) []byte {
	var entries []entry
	for _, c := range g.counters {
		n := c.v.Swap(0)
		if n == 0 && g.omitZero {
			continue
		}
		entries = append(entries, entry{name: c.name, unit: c.unit, num: float64(n), isInt: true})
	}
	for _, ga := range g.gauges {
		v, ok := ga.f()
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		entries = append(entries, entry{name: ga.name, unit: ga.unit, num: v})
	}
	for _, d := range g.dists {
		if h, ok := d.take(); ok {
			entries = append(entries, entry{name: d.name, unit: Milliseconds, hist: &h})
		}
	}
	if g.omitZero && !hasNonZero(entries) {
		return buf
	}
	for len(entries) > 0 {
		n := min(len(entries), MaxMetricsPerDirective)
		buf = g.appendDocument(buf, cfg, ts, entries[:n])
		entries = entries[n:]
	}
	return buf
}

func hasNonZero(entries []entry) bool {
	for _, e := range entries {
		if e.hist != nil || e.num != 0 {
			return true
		}
	}
	return false
}

func (g *Group) appendDocument(buf []byte, cfg Config, ts int64, entries []entry) []byte {
	buf = append(buf, `{"_aws":{"Timestamp":`...)
	buf = strconv.AppendInt(buf, ts, 10)
	buf = append(buf, `,"CloudWatchMetrics":[{"Namespace":`...)
	buf = appendString(buf, cfg.Namespace)
	buf = append(buf, `,"Dimensions":[[`...)
	for i, d := range g.dims {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, d.Name)
	}
	buf = append(buf, `]],"Metrics":[`...)
	for i, e := range entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"Name":`...)
		buf = appendString(buf, e.name)
		buf = append(buf, `,"Unit":`...)
		buf = appendString(buf, string(e.unit))
		if cfg.HighResolution {
			buf = append(buf, `,"StorageResolution":1`...)
		}
		buf = append(buf, '}')
	}
	buf = append(buf, `]}]}`...)
	for _, d := range g.dims {
		buf = append(buf, ',')
		buf = appendString(buf, d.Name)
		buf = append(buf, ':')
		buf = appendString(buf, d.Value)
	}
	for _, e := range entries {
		buf = append(buf, ',')
		buf = appendString(buf, e.name)
		buf = append(buf, ':')
		switch {
		case e.hist != nil:
			buf = appendHistogram(buf, e.hist)
		case e.isInt:
			buf = strconv.AppendInt(buf, int64(e.num), 10)
		default:
			buf = appendFloat(buf, e.num)
		}
	}
	return append(buf, "}\n"...)
}

// appendHistogram writes the histogram value that the AWS EMF libraries
// (aws-embedded-metrics-java's Histogram) send: each value stands for Counts
// occurrences of it, which is what CloudWatch computes percentiles from.
func appendHistogram(buf []byte, h *histogram) []byte {
	buf = append(buf, `{"Values":[`...)
	for i, v := range h.values {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendFloat(buf, v)
	}
	buf = append(buf, `],"Counts":[`...)
	for i, c := range h.counts {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, c, 10)
	}
	buf = append(buf, `],"Max":`...)
	buf = appendFloat(buf, h.max)
	buf = append(buf, `,"Min":`...)
	buf = appendFloat(buf, h.min)
	buf = append(buf, `,"Count":`...)
	buf = strconv.AppendUint(buf, h.count, 10)
	buf = append(buf, `,"Sum":`...)
	buf = appendFloat(buf, h.sum)
	return append(buf, '}')
}

func appendFloat(buf []byte, v float64) []byte {
	// Three decimals are a microsecond in milliseconds, and keep lines short.
	if math.Abs(v) < 1e15 {
		v = math.Round(v*1e3) / 1e3
	}
	return strconv.AppendFloat(buf, v, 'g', -1, 64)
}

func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}
