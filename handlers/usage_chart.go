package handlers

import (
	"fmt"
	"math"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// chartDays is how many days the chart draws at most (the newest); the
// table below it and the CSV keep every day.
const chartDays = 62

// Chart geometry, in the SVG's own units; the SVG scales to its card.
const (
	chartPlotH   = 140.0
	chartLeft    = 48.0
	chartTop     = 10.0
	chartBarStep = 14.0
)

// usageKinds are the kinds the chart stacks, bottom first, with the class
// that colours them.
var usageKinds = []struct{ Kind, Class string }{
	{runtime.UsageFunctionSeconds, "chart-fn"},
	{runtime.UsageMachineSeconds, "chart-machine"},
	{runtime.UsageArchiveBytes, "chart-archive"},
}

// usageChart lays out SC per day by kind as stacked bars, with the same
// numbers as a table for those who cannot see the picture.
func usageChart(days []runtime.UsageDay) pages.UsageChart {
	var ch pages.UsageChart
	for _, k := range usageKinds {
		ch.Kinds = append(ch.Kinds, pages.ChartKind{Label: usageKindLabel(k.Kind), Class: k.Class})
	}
	for _, d := range days {
		row := pages.ChartTableRow{Day: d.Day}
		total := 0.0
		for _, k := range usageKinds {
			row.Credits = append(row.Credits, fmt.Sprintf("%.2f", d.Credits[k.Kind]))
			total += d.Credits[k.Kind]
		}
		row.Total = fmt.Sprintf("%.2f", total)
		ch.Table = append(ch.Table, row)
	}
	shown := days[max(0, len(days)-chartDays):]
	top := 0.0
	for _, d := range shown {
		sum := 0.0
		for _, v := range d.Credits {
			sum += v
		}
		top = math.Max(top, sum)
	}
	if top == 0 {
		top = 1
	}
	ch.Max = fmt.Sprintf("%.2f SC", top)
	ch.Width = chartLeft + float64(max(len(shown), 7))*chartBarStep + 8
	ch.Height = chartTop + chartPlotH + 24
	ch.Base, ch.Left, ch.Top = chartTop+chartPlotH, chartLeft, chartTop
	for i, d := range shown {
		x := chartLeft + float64(i)*chartBarStep + 2
		y := chartTop + chartPlotH
		day := pages.ChartDay{X: x, W: chartBarStep - 4}
		for _, k := range usageKinds {
			v := d.Credits[k.Kind]
			if v <= 0 {
				continue
			}
			h := v / top * chartPlotH
			y -= h
			day.Bars = append(day.Bars, pages.ChartBar{Y: y, H: h, Class: k.Class,
				Title: fmt.Sprintf("%s, %s: %.2f SC", d.Day, usageKindLabel(k.Kind), v)})
		}
		// Label the first day, the last, and every seventh between.
		if i == 0 || i == len(shown)-1 || i%7 == 0 {
			day.Label = d.Day[5:]
		}
		ch.Days = append(ch.Days, day)
	}
	if len(shown) > 0 {
		ch.Summary = fmt.Sprintf("SC spent per day by kind, %s to %s; the highest day is %s.", shown[0].Day, shown[len(shown)-1].Day, ch.Max)
	}
	return ch
}
