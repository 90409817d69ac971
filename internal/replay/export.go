package replay

// Summarize sorts values in place and returns their Stat, with the
// percentiles every replay report uses (numpy's linear interpolation), so
// that another report over the same quantities is computed the same way.
func Summarize(values []float64) Stat { return summarize(values) }

// ChartJS returns the embedded Chart.js (MIT, assets/chart.js-LICENSE.md),
// for another self-contained report page to inline.
func ChartJS() []byte {
	b, err := assets.ReadFile("assets/chart.umd.min.js")
	if err != nil {
		panic("replay: embedded Chart.js missing: " + err.Error()) // the embed directive guarantees it
	}
	return b
}
