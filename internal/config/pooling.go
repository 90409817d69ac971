package config

// Runner is vLLM's --runner: which kind of model the server runs, hence
// which endpoints exist (docs/pooling.md).
type Runner string

// Runners.
const (
	// RunnerAuto is the mock's default: the generation endpoints and
	// /v1/embeddings side by side, as this server has always answered
	// (vLLM resolves auto from the model's architecture, which the mock
	// does not have).
	RunnerAuto Runner = "auto"
	// RunnerGenerate serves only the generation endpoints.
	RunnerGenerate Runner = "generate"
	// RunnerPooling serves only the pooling endpoints of the --convert
	// task.
	RunnerPooling Runner = "pooling"
	// RunnerDraft is vLLM's draft-model runner; refused (not supported yet).
	RunnerDraft Runner = "draft"
)

// Convert is vLLM's --convert: the pooling task a --runner pooling model
// serves.
type Convert string

// Conversions.
const (
	// ConvertAuto is embed under --runner pooling (vLLM picks by the
	// architecture's name).
	ConvertAuto Convert = "auto"
	// ConvertNone keeps the model as it is: embed for the mock.
	ConvertNone     Convert = "none"
	ConvertEmbed    Convert = "embed"
	ConvertClassify Convert = "classify"
)

// PoolingTask is the pooling task the configuration serves: "embed",
// "classify", or "" for a generative model (--runner generate).
// --runner auto serves embeddings beside generation: "embed".
func (c *Config) PoolingTask() string {
	switch c.Runner {
	case RunnerGenerate, RunnerDraft:
		return ""
	case RunnerPooling:
		if c.Convert == ConvertClassify {
			return "classify"
		}
	}
	return "embed"
}

// Generates reports whether the configuration serves the generation
// endpoints (every runner but pooling).
func (c *Config) Generates() bool { return c.Runner != RunnerPooling }

// validatePooling refuses a --convert or --num-labels that would change
// nothing: a conversion needs --runner pooling, labels need a classifier.
func (c *Config) validatePooling(v *validator) {
	if (c.Convert == ConvertEmbed || c.Convert == ConvertClassify) && c.Runner != RunnerPooling {
		v.errorf([]string{"convert", "runner"}, "convert %s needs runner pooling (got runner %s)", c.Convert, c.Runner)
	}
	if c.NumLabels != 1 && c.PoolingTask() != "classify" {
		v.errorf([]string{"num_labels"}, "num_labels is the label count of a classifier: it needs runner pooling and convert classify")
	}
}
