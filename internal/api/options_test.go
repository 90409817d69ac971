package api

import (
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/apiopts"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// testOptions builds the server's options from a test configuration with
// the code production uses (apiopts.FromConfig). The model is an id, never
// a directory here: its multimodal processor is the catalogue's, else
// --mm-processor-model's, as internal/worker loads it for an id.
func testOptions(cfg *config.Config) settings.Options {
	p, err := mmproc.ForModel(cfg.Model, mmproc.ModelFiles{})
	if err != nil && cfg.MMProcessorModel != "none" {
		p, _ = mmproc.ForModel(cfg.MMProcessorModel, mmproc.ModelFiles{})
	}
	if q, err := apiopts.ConfigureProcessor(cfg, p); err == nil {
		p = q
	}
	return apiopts.FromConfig(cfg, p)
}
