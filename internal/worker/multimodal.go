package worker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/mocker-server/mocker-server/internal/apiopts"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// loadMMProcessor returns the multimodal processor of the served model:
// from --model's processor files when it is a directory, else from the
// catalogue of known ids; a model neither names falls back to
// --mm-processor-model ("none": nil, a text-only model). A malformed
// processor file is a configuration error, and so is --mm-processor-kwargs
// that the processor refuses (applied here, as vLLM merges them into every
// call of its processor).
func loadMMProcessor(cfg *config.Config) (*mmproc.Processor, error) {
	p, err := mmProcessorOf(cfg)
	if err != nil {
		return nil, err
	}
	if p, err = apiopts.ConfigureProcessor(cfg, p); err != nil {
		return nil, &config.Error{Problems: []string{err.Error()}}
	}
	return p, nil
}

// mmProcessorOf finds the model's processor as loaded.
func mmProcessorOf(cfg *config.Config) (*mmproc.Processor, error) {
	var files mmproc.ModelFiles
	if st, err := os.Stat(cfg.Model); err == nil && st.IsDir() {
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(cfg.Model, name))
			if err != nil {
				return nil
			}
			return b
		}
		files = mmproc.ModelFiles{Config: read("config.json"), PreprocessorConfig: read("preprocessor_config.json"),
			ProcessorConfig: read("processor_config.json"), VideoPreprocessorConfig: read("video_preprocessor_config.json")}
	}
	p, err := mmproc.ForModel(cfg.Model, files)
	switch {
	case err == nil:
		return p, nil
	case !errors.Is(err, mmproc.ErrUnknownModel):
		return nil, &config.Error{Problems: []string{"--model " + cfg.Model + ": " + err.Error()}}
	case cfg.MMProcessorModel == "" || strings.EqualFold(cfg.MMProcessorModel, "none"):
		return nil, nil
	}
	p, err = mmproc.ForModel(cfg.MMProcessorModel, mmproc.ModelFiles{})
	if err != nil {
		return nil, &config.Error{Problems: []string{"--mm-processor-model " + cfg.MMProcessorModel + ": " + err.Error()}}
	}
	return p, nil
}
