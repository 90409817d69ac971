package api

// responseFormatTypes are the response_format.type values vLLM accepts.
var responseFormatTypes = map[string]bool{
	"text": true, "json_object": true, "json_schema": true, "structural_tag": true,
}

// parseResponseFormat type-checks response_format like vLLM's request
// model does: an object whose "type" is one of responseFormatTypes. The
// mock never constrains its output, so the value is otherwise ignored.
func parseResponseFormat(o object) {
	raw, ok := o.Kind("response_format", "object")
	if !ok {
		return
	}
	inner, e := parseObject(raw)
	if e != nil {
		o.fail(errFieldType("response_format", "object"))
		return
	}
	inner.path = "response_format"
	inner.err = o.err
	typ, ok := inner.String("type")
	if o.failed() != nil {
		return
	}
	if !ok {
		o.fail(errFieldRequired("response_format.type"))
		return
	}
	if !responseFormatTypes[typ] {
		o.fail(errInvalid("response_format.type",
			"response_format.type must be 'text', 'json_object', 'json_schema' or 'structural_tag', got '%s'", typ))
	}
}
