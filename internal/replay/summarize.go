package replay

// Summarize sorts values in place and returns their Stat, with the
// percentiles every replay report uses (numpy's linear interpolation), so
// that another report over the same quantities is computed the same way.
func Summarize(values []float64) Stat { return summarize(values) }
