package e2e

import (
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one set of bars (or one line) of a plot.
type Series struct {
	Name   string
	Values []float64
}

// BarPlot writes a grouped bar chart: one group per category, one bar per series.
func BarPlot(path, title, ylabel string, categories []string, series []Series, logY bool) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	w := vg.Points(60 / float64(max(len(series), 1)))
	for i, s := range series {
		vals := make(plotter.Values, len(s.Values))
		for j, v := range s.Values {
			vals[j] = v
			if logY {
				vals[j] = math.Max(0, math.Log10(math.Max(v, 1)))
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(i)
		b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
	}
	p.Legend.Top = true
	p.NominalX(categories...)
	if !logY {
		top := 0.0
		for _, s := range series {
			for _, v := range s.Values {
				top = math.Max(top, v)
			}
		}
		p.Y.Max = top * 1.25 // room for the legend
	}
	if logY {
		// Bars start at zero, which a log axis cannot show: draw log10 of
		// the values on a linear axis and label its ticks as powers of ten.
		p.Y.Min = 0
		top := 0.0
		for _, s := range series {
			for _, v := range s.Values {
				top = math.Max(top, math.Log10(math.Max(v, 1)))
			}
		}
		p.Y.Max = top + 0.6 // room for the legend
		p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
			var ts []plot.Tick
			for k := math.Ceil(lo); k <= hi; k++ {
				ts = append(ts, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k), 'g', -1, 64)})
			}
			return ts
		})
	}
	return p.Save(vg.Length(110*max(len(categories), 4))*vg.Points(1), 4*vg.Inch, path)
}

// CDFPlot writes the empirical CDF of each named sample set, in milliseconds.
func CDFPlot(path, title string, names []string, samples [][]time.Duration, marks []float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ms from S3 PUT"
	p.Y.Label.Text = "fraction of trials"
	for i, s := range samples {
		sorted := slices.Clone(s)
		slices.Sort(sorted)
		pts := make(plotter.XYs, len(sorted))
		for j, d := range sorted {
			pts[j] = plotter.XY{X: ms(d), Y: float64(j+1) / float64(len(sorted))}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	for i, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m, Y: 0}, {X: m, Y: 1}})
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(l)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.YOffs = vg.Points(20)
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}

// LinePlot writes y against x for each series (x = categories as numbers).
func LinePlot(path, title, xlabel, ylabel string, x []float64, series []Series, logX bool) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for i, s := range series {
		pts := make(plotter.XYs, len(x))
		for j := range x {
			pts[j] = plotter.XY{X: x[j], Y: s.Values[j]}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l)
	}
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
