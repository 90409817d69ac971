package engine

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
)

// TransferDelay is the modeled KV transfer time of disaggregated serving
// (engine.md §12.3): tokens × bytesPerToken at bandwidthGBs GB/s, divided by
// the speedup ratio. It is 0 when bandwidth or bytes per token is 0, or the
// speedup ratio means "no delay".
func TransferDelay(tokens, bytesPerToken int, bandwidthGBs, speedup float64) time.Duration {
	if tokens <= 0 || bytesPerToken <= 0 || bandwidthGBs <= 0 || config.NoDelay(speedup) {
		return 0
	}
	ms := float64(tokens) * float64(bytesPerToken) / (bandwidthGBs * 1e9) * 1000 / speedup
	return time.Duration(ms * float64(time.Millisecond))
}
