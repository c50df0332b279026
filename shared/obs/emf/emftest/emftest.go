// Package emftest checks lines against the CloudWatch embedded metric format
// specification, for tests of code that emits metrics: a line that passes
// Parse is one CloudWatch would turn into metrics.
package emftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/tilesieve/tilesieve/shared/obs/emf"
)

// Histogram is a distribution value as a line carries it.
type Histogram struct {
	Values             []float64
	Counts             []float64
	Min, Max, Sum, Cnt float64
}

// Percentile is the p-th percentile (0 < p ≤ 100) of the values, each counted
// Counts times, as CloudWatch computes it from a histogram.
func (h Histogram) Percentile(p float64) float64 {
	type vc struct{ v, c float64 }
	pairs := make([]vc, len(h.Values))
	for i := range h.Values {
		pairs[i] = vc{h.Values[i], h.Counts[i]}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].v < pairs[j].v })
	rank := math.Ceil(p / 100 * h.Cnt)
	var seen float64
	for _, x := range pairs {
		seen += x.c
		if seen >= rank {
			return x.v
		}
	}
	return math.NaN()
}

// Doc is one parsed EMF line.
type Doc struct {
	Timestamp  int64
	Namespace  string
	Dimensions [][]string         // the dimension sets
	DimValues  map[string]string  // dimension name → value
	Units      map[string]string  // metric name → unit ("" when absent)
	Numbers    map[string]float64 // metrics sent as one number
	Histograms map[string]Histogram
}

// Parse checks one line (a JSON object, no trailing data) against the
// specification and returns what it says.
func Parse(line []byte) (*Doc, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var root map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON object")
	}
	rawAWS, ok := root["_aws"]
	if !ok {
		return nil, fmt.Errorf("no _aws member")
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(rawAWS, &meta); err != nil {
		return nil, fmt.Errorf("_aws is not an object: %w", err)
	}
	for k := range meta {
		if k != "Timestamp" && k != "CloudWatchMetrics" && k != "LogGroupName" {
			return nil, fmt.Errorf("_aws has an unknown member %q", k)
		}
	}
	d := &Doc{DimValues: map[string]string{}, Units: map[string]string{}, Numbers: map[string]float64{}, Histograms: map[string]Histogram{}}
	if err := json.Unmarshal(meta["Timestamp"], &d.Timestamp); err != nil || d.Timestamp <= 0 {
		return nil, fmt.Errorf("_aws.Timestamp %s: want milliseconds since the epoch", meta["Timestamp"])
	}
	var directives []struct {
		Namespace  *string
		Dimensions [][]string
		Metrics    []struct {
			Name              *string
			Unit              *string
			StorageResolution *int
		}
	}
	if err := json.Unmarshal(meta["CloudWatchMetrics"], &directives); err != nil || len(directives) == 0 {
		return nil, fmt.Errorf("_aws.CloudWatchMetrics: want a non-empty array of directives (%v)", err)
	}
	for _, dir := range directives {
		if dir.Namespace == nil || *dir.Namespace == "" || len(*dir.Namespace) > 1024 {
			return nil, fmt.Errorf("directive without a valid Namespace")
		}
		d.Namespace = *dir.Namespace
		if dir.Dimensions == nil {
			return nil, fmt.Errorf("directive without Dimensions")
		}
		for _, set := range dir.Dimensions {
			if len(set) > emf.MaxDimensions {
				return nil, fmt.Errorf("dimension set of %d: at most %d", len(set), emf.MaxDimensions)
			}
			for _, name := range set {
				var v string
				if err := json.Unmarshal(root[name], &v); err != nil || v == "" {
					return nil, fmt.Errorf("dimension %s: want a non-empty string member", name)
				}
				d.DimValues[name] = v
			}
		}
		d.Dimensions = append(d.Dimensions, dir.Dimensions...)
		if len(dir.Metrics) == 0 || len(dir.Metrics) > emf.MaxMetricsPerDirective {
			return nil, fmt.Errorf("directive names %d metrics: want 1-%d", len(dir.Metrics), emf.MaxMetricsPerDirective)
		}
		for _, m := range dir.Metrics {
			if m.Name == nil || *m.Name == "" || len(*m.Name) > 255 {
				return nil, fmt.Errorf("metric without a valid Name")
			}
			name := *m.Name
			if m.Unit != nil && !emf.Unit(*m.Unit).Valid() {
				return nil, fmt.Errorf("metric %s: unit %q is not a CloudWatch unit", name, *m.Unit)
			}
			if m.Unit != nil {
				d.Units[name] = *m.Unit
			}
			if m.StorageResolution != nil && *m.StorageResolution != 1 && *m.StorageResolution != 60 {
				return nil, fmt.Errorf("metric %s: StorageResolution %d: want 1 or 60", name, *m.StorageResolution)
			}
			raw, ok := root[name]
			if !ok {
				return nil, fmt.Errorf("metric %s has no top-level member", name)
			}
			if err := d.value(name, raw); err != nil {
				return nil, fmt.Errorf("metric %s: %w", name, err)
			}
		}
	}
	return d, nil
}

func (d *Doc) value(name string, raw json.RawMessage) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		return fmt.Errorf("null: want a number")
	}
	var num float64
	if err := json.Unmarshal(raw, &num); err == nil {
		d.Numbers[name] = num
		return nil
	}
	var arr []float64
	if err := json.Unmarshal(raw, &arr); err == nil {
		if len(arr) > emf.MaxValues {
			return fmt.Errorf("%d values: at most %d", len(arr), emf.MaxValues)
		}
		d.Numbers[name] = sum(arr)
		return nil
	}
	var h struct {
		Values, Counts       []float64
		Max, Min, Sum, Count *float64
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("want a number, an array of numbers or a histogram object: %w", err)
	}
	if h.Max == nil || h.Min == nil || h.Sum == nil || h.Count == nil {
		return fmt.Errorf("histogram without Max, Min, Sum or Count")
	}
	if len(h.Values) != len(h.Counts) || len(h.Values) == 0 || len(h.Values) > emf.MaxValues {
		return fmt.Errorf("%d Values and %d Counts: want the same number, 1-%d", len(h.Values), len(h.Counts), emf.MaxValues)
	}
	for i, v := range h.Values {
		if v < *h.Min || v > *h.Max {
			return fmt.Errorf("value %v outside [Min %v, Max %v]", v, *h.Min, *h.Max)
		}
		if c := h.Counts[i]; c <= 0 || c != math.Trunc(c) {
			return fmt.Errorf("count %v: want a positive whole number", c)
		}
	}
	n := sum(h.Counts)
	if n != *h.Count {
		return fmt.Errorf("histogram Count %v, Counts add up to %v", *h.Count, n)
	}
	// The sum must be one some values in [Min, Max] could give (with room for rounding).
	lo, hi := *h.Max+*h.Min*(n-1), *h.Min+*h.Max*(n-1)
	if slack := 1e-3 * n; *h.Sum < lo-slack || *h.Sum > hi+slack {
		return fmt.Errorf("histogram Sum %v impossible for %v values in [%v, %v]", *h.Sum, n, *h.Min, *h.Max)
	}
	d.Histograms[name] = Histogram{Values: h.Values, Counts: h.Counts, Min: *h.Min, Max: *h.Max, Sum: *h.Sum, Cnt: n}
	return nil
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// ParseAll splits out into lines and parses each; any line that is not EMF is
// an error.
func ParseAll(out []byte) ([]*Doc, error) {
	var docs []*Doc
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			if len(out) == 0 {
				break
			}
			return nil, fmt.Errorf("line %d is empty", i+1)
		}
		d, err := Parse(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w\n%s", i+1, err, line)
		}
		docs = append(docs, d)
	}
	return docs, nil
}
