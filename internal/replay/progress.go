package replay

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ProgressBar draws a run's progress on one terminal line: simulated time
// done out of the total (when known) and simulated requests per wall-clock
// second.
type ProgressBar struct {
	w     io.Writer
	label string
	total time.Duration
	start time.Time
	last  time.Time
}

// NewProgressBar returns a bar for a run of expected virtual length total
// (0 = unknown).
func NewProgressBar(w io.Writer, label string, total time.Duration) *ProgressBar {
	now := time.Now()
	return &ProgressBar{w: w, label: label, total: total, start: now}
}

// Update redraws the bar at most ten times a second, and at the end.
func (p *ProgressBar) Update(pr Progress) {
	now := time.Now()
	if !pr.Done && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	wall := now.Sub(p.start).Seconds()
	rate := 0.0
	if wall > 0 {
		rate = float64(pr.Arrived) / wall
	}
	bar := ""
	if p.total > 0 {
		frac := min(1, pr.SimTime.Seconds()/p.total.Seconds())
		if pr.Done {
			frac = 1
		}
		n := int(frac * 30)
		bar = fmt.Sprintf("[%s%s] %3.0f%% ", strings.Repeat("#", n), strings.Repeat(".", 30-n), 100*frac)
	}
	fmt.Fprintf(p.w, "\r%s %ssim %s  %d requests  %.0f req/s", p.label, bar,
		pr.SimTime.Truncate(time.Millisecond), pr.Arrived, rate)
	if pr.Done {
		fmt.Fprintln(p.w)
	}
}
