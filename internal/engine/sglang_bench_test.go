package engine

import "testing"

// BenchmarkSGLangDecodePass256 measures one SGLang decode pass (BeginPass +
// EndPass) with 256 running requests, page size 1: the prefill attempt that
// finds no waiting request, the decode memory check, one page per request,
// the pass's timing and delivery.
func BenchmarkSGLangDecodePass256(b *testing.B) {
	benchDecodePasses(b, func(c *Config) {
		c.Type = EngineSGLang
		c.BlockSize = 1
		c.SGLang.ClipMaxNewTokens = 1 // admit all 256 at once
	})
}
