package routerlab

import (
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// verdict states the router against each offline policy and the bound, the
// reference policy (kv_aware when replayed) first.
func verdict(rep *Report) []string {
	if len(rep.Offline) == 0 {
		return nil
	}
	on := &rep.Online
	ref := 0
	for i, s := range rep.Offline {
		if s.Name == string(replay.KVAware) {
			ref = i
		}
	}
	order := []int{ref}
	for i := range rep.Offline {
		if i != ref {
			order = append(order, i)
		}
	}
	var lines []string
	for n, i := range order {
		off := &rep.Offline[i]
		var parts []string
		if on.PrefixCacheHitRate >= 0 {
			parts = append(parts, fmt.Sprintf("%s of %s's cache hits (hit rate %.1f %% vs %.1f %%)",
				percentOf(on.PrefixCacheHitRate, off.PrefixCacheHitRate), off.Name, 100*on.PrefixCacheHitRate, 100*off.PrefixCacheHitRate))
		}
		parts = append(parts, fmt.Sprintf("TTFT p99 %s %s's (%.1f ms vs %.1f ms)", times(on.TTFTMs.P99, off.TTFTMs.P99), off.Name, on.TTFTMs.P99, off.TTFTMs.P99))
		parts = append(parts, fmt.Sprintf("imbalance %s (in-flight max/mean %.2f vs %.2f)", times(on.Imbalance.InFlight, off.Imbalance.InFlight),
			on.Imbalance.InFlight, off.Imbalance.InFlight))
		parts = append(parts, fmt.Sprintf("same worker as %s for %.0f %% of requests", off.Name, 100*off.SameRouting))
		prefix := "your router reached "
		if n > 0 {
			prefix = "vs " + off.Name + ": "
		}
		if on.PrefixCacheHitRate < 0 {
			prefix = strings.TrimSuffix(prefix, "reached ") + "had "
		}
		lines = append(lines, prefix+strings.Join(parts, ", "))
	}
	if b := rep.Bound; b != nil && on.PrefixCacheHitRate >= 0 {
		best, bestName := -1.0, ""
		for _, s := range rep.Offline {
			if s.PrefixCacheHitRate > best {
				best, bestName = s.PrefixCacheHitRate, s.Name
			}
		}
		lines = append(lines, fmt.Sprintf("clairvoyant bound: hit rate %.1f %%; your router reached %s of it, the best policy (%s) %s",
			100*b.HitRate, percentOf(on.PrefixCacheHitRate, b.HitRate), bestName, percentOf(best, b.HitRate)))
	}
	return lines
}

func percentOf(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f %%", 100*a/b)
}

func times(a, b float64) string {
	if b <= 0 {
		return "n/a×"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
