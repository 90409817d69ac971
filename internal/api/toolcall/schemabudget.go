package toolcall

import (
	"context"
	"errors"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/schemagen"
)

// SchemaContext is what compiling a request's schemas may cost: the
// request's context (the work stops when the client leaves) and the
// server's schema budgets (zero: schemagen's default).
type SchemaContext struct {
	Ctx      context.Context // nil: never cancelled
	MaxBytes int             // --max-schema-bytes
	MaxEnum  int             // --max-schema-enum
	MaxSteps int             // --max-schema-steps
}

// schemaFlags names each schemagen limit by the flag that sets it, so a
// refusal tells the operator what to raise.
var schemaFlags = map[schemagen.Limit]string{
	schemagen.LimitSchemaBytes: "--max-schema-bytes",
	schemagen.LimitEnum:        "--max-schema-enum",
	schemagen.LimitSteps:       "--max-schema-steps",
}

// compile compiles one schema of the request; param names its field in
// the 400.
func (sc SchemaContext) compile(raw []byte, param string) (*schemagen.Schema, *wire.APIError) {
	ctx := sc.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := schemagen.CompileContext(ctx, raw, schemagen.Limits{
		MaxSchemaBytes: sc.MaxBytes, MaxEnum: sc.MaxEnum, MaxSteps: sc.MaxSteps})
	if err == nil {
		return s, nil
	}
	if be, ok := errors.AsType[*schemagen.BudgetError](err); ok {
		return nil, wire.ErrInvalid(param, "%s: %s (%s).", param, be.Error(), schemaFlags[be.Limit])
	}
	return nil, wire.ErrInvalid(param, "%s", err.Error())
}
