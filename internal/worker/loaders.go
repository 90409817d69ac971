package worker

import (
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/profile"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// GateScheduler calls open once after d has elapsed, unless the returned
// stop function is called first. It schedules the opening of the startup
// gate (cfg.StartupTime > 0).
type GateScheduler func(d time.Duration, open func()) (stop func())

// wallClockGate is the production GateScheduler: the startup time imitates
// model loading, which a speedup ratio does not shorten.
func wallClockGate(d time.Duration, open func()) (stop func()) {
	timer := time.AfterFunc(d, open)
	return func() { timer.Stop() }
}

// TextModelLoader loads the tokenizer and chat template a configuration
// names; nil results mean the built-in tokenizer and ChatML template.
type TextModelLoader func(cfg *config.Config) (tokenizer.Model, api.ChatRenderer, error)

// Loaders read the files a worker's configuration names. A worker loads
// them once, at its first start; a restart reuses them.
type Loaders struct {
	// Profile reads a timing profile (default profile.Load).
	Profile func(path string) (*engine.Profile, error)
	// TextModel loads the tokenizer and chat template (default: none, the
	// built-in ones).
	TextModel TextModelLoader
}

// Shared returns loaders that read each distinct file once however many
// workers ask for it: a fleet's workers share one parsed profile and one
// tokenizer per configuration. Errors are not cached.
func (l Loaders) Shared() Loaders {
	profiles := l.Profile
	if profiles == nil {
		profiles = profile.Load
	}
	type textKey struct{ tokenizer, template, model string }
	type textModel struct {
		model tokenizer.Model
		chat  api.ChatRenderer
	}
	var mu sync.Mutex
	loadedProfiles := map[string]*engine.Profile{}
	loadedText := map[textKey]textModel{}
	out := Loaders{Profile: func(path string) (*engine.Profile, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := loadedProfiles[path]; ok {
			return p, nil
		}
		p, err := profiles(path)
		if err == nil {
			loadedProfiles[path] = p
		}
		return p, err
	}}
	if load := l.TextModel; load != nil {
		out.TextModel = func(cfg *config.Config) (tokenizer.Model, api.ChatRenderer, error) {
			mu.Lock()
			defer mu.Unlock()
			key := textKey{cfg.Tokenizer, cfg.ChatTemplate, cfg.Model}
			if tm, ok := loadedText[key]; ok {
				return tm.model, tm.chat, nil
			}
			model, chat, err := load(cfg)
			if err == nil {
				loadedText[key] = textModel{model, chat}
			}
			return model, chat, err
		}
	}
	return out
}

// files is what a worker loaded at its first start.
type files struct {
	profile *engine.Profile
	model   tokenizer.Model
	chat    api.ChatRenderer
	mm      *mmproc.Processor // nil: a text-only model
}

// load reads the files cfg names. A profile that fails to load or validate
// is a configuration error (exit status 2); so is a bad tokenizer or chat
// template (the loader reports those as *config.Error itself).
func (l Loaders) load(cfg *config.Config) (files, error) {
	var f files
	var err error
	if f.profile, err = l.TimingProfile(cfg); err != nil {
		return f, err
	}
	if l.TextModel != nil {
		if f.model, f.chat, err = l.TextModel(cfg); err != nil {
			return f, err
		}
	}
	if f.mm, err = loadMMProcessor(cfg); err != nil {
		return f, err
	}
	return f, nil
}

// TimingProfile reads cfg's planner profile when its timing model is the
// interpolated one (nil otherwise); a failure is a configuration error.
func (l Loaders) TimingProfile(cfg *config.Config) (*engine.Profile, error) {
	if cfg.TimingModel != engine.TimingInterpolated {
		return nil, nil
	}
	load := l.Profile
	if load == nil {
		load = profile.Load
	}
	p, err := load(cfg.PlannerProfileData)
	if err != nil {
		return nil, &config.Error{Problems: []string{err.Error()}}
	}
	return p, nil
}
