package schemagen

import (
	"context"
	"errors"
	"fmt"
)

// ErrBudget is wrapped by the error of a compilation, generation or
// validation that a Limits bound stopped: the schema is too large, has too
// many enum values, or needs more work than allowed. A *BudgetError carries
// which bound; it also wraps ErrInvalidSchema, so a caller that answers 400
// for an invalid schema answers 400 for this too.
var ErrBudget = errors.New("schema exceeds a resource limit")

// Limit names one bound of Limits.
type Limit uint8

const (
	// LimitSchemaBytes is Limits.MaxSchemaBytes.
	LimitSchemaBytes Limit = iota + 1
	// LimitEnum is Limits.MaxEnum.
	LimitEnum
	// LimitSteps is Limits.MaxSteps.
	LimitSteps
)

// String returns the limit's field name in Limits.
func (l Limit) String() string {
	switch l {
	case LimitSchemaBytes:
		return "MaxSchemaBytes"
	case LimitEnum:
		return "MaxEnum"
	case LimitSteps:
		return "MaxSteps"
	}
	return fmt.Sprintf("Limit(%d)", uint8(l))
}

// BudgetError reports the bound of Limits that stopped the work; callers
// map Limit to their own flag name.
type BudgetError struct {
	Limit Limit
	Max   int // the bound in force
	// Got is the size found (schema bytes, enum values); 0 for LimitSteps,
	// whose work stops at the bound.
	Got int
}

func (e *BudgetError) Error() string {
	switch e.Limit {
	case LimitSchemaBytes:
		return fmt.Sprintf("the schema is %d bytes, more than the limit of %d", e.Got, e.Max)
	case LimitEnum:
		return fmt.Sprintf("the schema has %d enum values, more than the limit of %d", e.Got, e.Max)
	}
	return fmt.Sprintf("the schema needs more than %d steps of work to check or to generate", e.Max)
}

// Unwrap makes the error match both ErrBudget and ErrInvalidSchema.
func (e *BudgetError) Unwrap() []error { return []error{ErrBudget, ErrInvalidSchema} }

// Limits bound the resources one schema may take. A zero field takes its
// default from DefaultLimits; a negative one means no bound.
type Limits struct {
	// MaxSchemaBytes bounds the schema document's size.
	MaxSchemaBytes int
	// MaxEnum bounds the number of enum (and const) values across the
	// whole schema. OpenAI's structured outputs allow 1,000.
	MaxEnum int
	// MaxSteps bounds the work of one compilation (including the search
	// for its fallback instance), and separately of each generation and
	// validation: schema nodes visited, values compared, bytes generated.
	// A step is tens of nanoseconds, so the default stops a schema built
	// to explode (nested anyOf over an unsatisfiable leaf) in milliseconds.
	MaxSteps int
}

// DefaultLimits returns the limits Compile applies.
func DefaultLimits() Limits {
	return Limits{MaxSchemaBytes: 64 << 10, MaxEnum: 1000, MaxSteps: 400_000}
}

// resolved returns l with zero fields set to their defaults.
func (l Limits) resolved() Limits {
	d := DefaultLimits()
	if l.MaxSchemaBytes == 0 {
		l.MaxSchemaBytes = d.MaxSchemaBytes
	}
	if l.MaxEnum == 0 {
		l.MaxEnum = d.MaxEnum
	}
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	return l
}

// budget counts the steps of one piece of work and notices, every
// checkEvery steps, that its context is done (the request is gone). Once
// spent or cancelled it stays so: every later spend fails at once, and the
// work unwinds through its ordinary "no instance" paths.
type budget struct {
	ctx   context.Context
	max   int // < 0: no bound
	used  int
	check int // steps until the next look at ctx
	err   error
}

const checkEvery = 4096

func newBudget(ctx context.Context, maxSteps int) *budget {
	if ctx == nil {
		ctx = context.Background()
	}
	return &budget{ctx: ctx, max: maxSteps, check: checkEvery}
}

// spend charges n steps and reports whether the work may go on.
func (b *budget) spend(n int) bool {
	if b.err != nil {
		return false
	}
	b.used += n
	if b.max >= 0 && b.used > b.max {
		b.err = &BudgetError{Limit: LimitSteps, Max: b.max}
		return false
	}
	if b.check -= n; b.check <= 0 {
		b.check = checkEvery
		if err := b.ctx.Err(); err != nil {
			b.err = fmt.Errorf("schema work stopped: %w", err)
			return false
		}
	}
	return true
}
