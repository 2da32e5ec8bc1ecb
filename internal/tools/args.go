package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ParseArgs decodes a tool's arguments into T, a struct with json tags.
// Empty input means {} (models send "" for a call without arguments), and
// unknown fields are ignored (models add some). On invalid JSON or a value
// of the wrong type the error says what was wrong and which shape T
// expects, e.g.
//
//	arguments are not valid JSON or have the wrong type: "offset" must be
//	integer, not string; expected {"path": string, "offset": integer}
//
// Values that parse but are wrong (an empty path, a negative offset) are
// for the tool to check, with a hint specific to the value.
func ParseArgs[T any](input json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(input)) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(input, &v); err != nil {
		return v, fmt.Errorf("arguments are not valid JSON or have the wrong type: %s; expected %s", describeJSONError(err), ArgsShape[T]())
	}
	return v, nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%q must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// ArgsShape describes the JSON object T decodes from, in the form used in
// argument errors: {"path": string, "offset": integer}.
func ArgsShape[T any]() string {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return jsonKind(t)
	}
	var parts []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		parts = append(parts, fmt.Sprintf("%q: %s", name, jsonKind(f.Type)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	default:
		return "object"
	}
}
