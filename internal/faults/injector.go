package faults

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// HeaderName is the request header that picks one request's fault when the
// server allows fault headers (--allow-fault-headers).
const HeaderName = "X-Mocker-Fault"

// Settings are the run-time failure settings. The JSON keys are the
// configuration keys of the same flags.
type Settings struct {
	// FailureRate is the probability in [0, 1] that a request no script
	// rule matched gets one of FailureTypes.
	FailureRate float64 `json:"failure_rate"`
	// FailureTypes are the fault specifications (Parse) drawn from with
	// equal weight; empty means every kind with its default parameters
	// except timeout.
	FailureTypes []string `json:"failure_types"`
	// Script is an inline failure script (ParseScript).
	Script string `json:"failure_script"`
	// AllowHeaders lets requests pick their fault with HeaderName.
	AllowHeaders bool `json:"allow_fault_headers"`
}

// compiled is an immutable parsed form of Settings.
type compiled struct {
	settings Settings
	script   *Script
	types    []Fault
}

func compile(s Settings) (*compiled, error) {
	var errs []error
	if math.IsNaN(s.FailureRate) || s.FailureRate < 0 || s.FailureRate > 1 {
		errs = append(errs, fmt.Errorf("failure_rate must be between 0 and 1, got %v", s.FailureRate))
	}
	c := &compiled{settings: s}
	for _, spec := range s.FailureTypes {
		f, err := Parse(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("failure_types: %w", err))
			continue
		}
		if f.Kind == None {
			errs = append(errs, fmt.Errorf("failure_types: %q is not a failure", spec))
			continue
		}
		c.types = append(c.types, f)
	}
	if len(s.FailureTypes) == 0 {
		for _, k := range Kinds {
			if k.drawnByDefault() {
				f, _ := Parse(string(k))
				c.types = append(c.types, f)
			}
		}
	}
	if strings.HasPrefix(s.Script, "@") {
		errs = append(errs, fmt.Errorf("failure_script %q: resolve @FILE with ReadScript first", s.Script))
	} else if sc, err := ParseScript(s.Script); err != nil {
		errs = append(errs, err)
	} else {
		c.script = sc
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Check validates settings without building an Injector (for configuration
// validation). A "@FILE" script is read.
func Check(s Settings) error {
	var err error
	if s.Script, err = ReadScript(s.Script); err != nil {
		return err
	}
	_, err = compile(s)
	return err
}

// ReadScript resolves the --failure-script value: "@FILE" is replaced by
// the file's contents, anything else is returned as is.
func ReadScript(spec string) (string, error) {
	path, ok := strings.CutPrefix(spec, "@")
	if !ok {
		return spec, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("failure_script: %w", err)
	}
	return string(b), nil
}

// Options are an Injector's collaborators; the zero value is usable.
type Options struct {
	// Seed makes the random failure rate reproducible: the decision for the
	// n-th request depends only on (Seed, n).
	Seed int64
	// Now is the clock of the script's time windows. Default time.Now.
	Now func() time.Time
}

// Injector decides each request's fault. It is safe for concurrent use;
// decisions are made in arrival order under one lock (per worker: each
// server process, or each fleet worker, has its own Injector).
type Injector struct {
	seed uint64
	now  func() time.Time

	mu      sync.Mutex
	c       *compiled
	arrived uint64    // requests decided since the settings were installed
	origin  time.Time // when the settings were installed
}

// New returns an Injector with the given settings (a "@FILE" script is
// read).
func New(s Settings, o Options) (*Injector, error) {
	in := &Injector{seed: uint64(o.Seed), now: o.Now}
	if in.now == nil {
		in.now = time.Now
	}
	var err error
	if s.Script, err = ReadScript(s.Script); err != nil {
		return nil, err
	}
	if err := in.Update(s); err != nil {
		return nil, err
	}
	return in, nil
}

// Settings returns the current settings.
func (in *Injector) Settings() Settings {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.c.settings
	s.FailureTypes = append([]string(nil), s.FailureTypes...)
	return s
}

// Update replaces the settings (the script must be inline). The arrival
// count and the script's time origin restart, so "first 3" means the next
// three requests. On error the old settings stay.
func (in *Injector) Update(s Settings) error {
	s.FailureTypes = append([]string(nil), s.FailureTypes...)
	c, err := compile(s)
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.c, in.arrived, in.origin = c, 0, in.now()
	in.mu.Unlock()
	return nil
}

// Source says which mechanism decided a fault.
type Source string

// Decision sources.
const (
	FromHeader Source = "header"
	FromScript Source = "script"
	FromRate   Source = "rate"
)

// Decision is the outcome for one request.
type Decision struct {
	Fault Fault
	// Source is empty when no fault applies.
	Source Source
	// Index is the request's 1-based arrival number.
	Index uint64
	// HeaderIgnored is set when the request carried HeaderName but fault
	// headers are not allowed.
	HeaderIgnored bool
}

// Injected reports whether the decision injects a fault.
func (d Decision) Injected() bool { return d.Source != "" && d.Fault.Kind != None }

// Decide numbers the next request in arrival order and decides its fault:
// an allowed header first, then the script, then the random rate. header
// is the value of HeaderName ("" when absent); a malformed allowed header
// is an error (the caller answers 400).
func (in *Injector) Decide(header string) (Decision, error) {
	in.mu.Lock()
	in.arrived++
	n, c, elapsed := in.arrived, in.c, in.now().Sub(in.origin)
	in.mu.Unlock()

	d := Decision{Index: n}
	if header != "" {
		if !c.settings.AllowHeaders {
			d.HeaderIgnored = true
		} else {
			f, err := Parse(header)
			if err != nil {
				return d, fmt.Errorf("%s: %w", HeaderName, err)
			}
			d.Fault, d.Source = f, FromHeader
			return d, nil
		}
	}
	if f, ok := c.script.Match(n, elapsed); ok {
		d.Fault, d.Source = f, FromScript
		return d, nil
	}
	if c.settings.FailureRate > 0 && len(c.types) > 0 {
		u := mix(in.seed ^ mix(n))
		if float64(u>>11)/(1<<53) < c.settings.FailureRate {
			d.Fault = c.types[mix(u)%uint64(len(c.types))]
			d.Source = FromRate
		}
	}
	return d, nil
}

// mix is splitmix64's finaliser: a cheap, well-distributed hash that makes
// the random decision a pure function of (seed, arrival number).
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
