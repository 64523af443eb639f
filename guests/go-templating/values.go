package main

// Values: how numbers look to each part of the function.
//
// Crossplane carries objects as google.protobuf.Struct, so every number is
// a float64 there. Upstream hands a template the request as
// protojson.Marshal printed it (a double the way encoding/json prints one)
// decoded again by k8s.io/apimachinery's JSON package, which makes a
// number an int64 when its text is an integer that fits. parseObject
// reproduces that from the host's JSON text: 1000000 reaches a template as
// int64, 1.5 as float64, 1e21 as float64. Objects going back out are
// Structs again, so encodeJSON prints every number as a float64.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// formatDouble prints f as protojson and encoding/json print a double.
func formatDouble(f float64) string {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	out := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// 1e-07, not 1e-7: drop the exponent's leading zero.
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return string(out)
}

// templateNumber is the value a number of the host's JSON has in a
// template: through a double, printed, and read back preserving integers.
func templateNumber(text string) (any, error) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, err
	}
	printed := formatDouble(f)
	if !strings.Contains(printed, ".") {
		if i, err := strconv.ParseInt(printed, 10, 64); err == nil {
			return i, nil
		}
	}
	return f, nil
}

var errNotObject = errors.New("not a JSON object")

// parseObject parses a JSON object from the host into template values.
// An empty text is an empty object.
func parseObject(text string) (map[string]any, error) {
	return parseObjectWith(text, templateNumber)
}

// parseStruct parses a JSON object from the host as a
// google.protobuf.Struct holds it: every number a float64.
func parseStruct(text string) (map[string]any, error) {
	return parseObjectWith(text, func(n string) (any, error) { return strconv.ParseFloat(n, 64) })
}

func parseObjectWith(text string, number func(string) (any, error)) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errNotObject
	}
	if err := convertNumbers(obj, number); err != nil {
		return nil, err
	}
	return obj, nil
}

// convertNumbers replaces the json.Numbers in v, in place.
func convertNumbers(v any, number func(string) (any, error)) error {
	convert := func(e any) (any, error) {
		if n, ok := e.(json.Number); ok {
			return number(string(n))
		}
		return e, convertNumbers(e, number)
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			c, err := convert(e)
			if err != nil {
				return err
			}
			t[k] = c
		}
	case []any:
		for i, e := range t {
			c, err := convert(e)
			if err != nil {
				return err
			}
			t[i] = c
		}
	}
	return nil
}

// toDoubles returns a copy of v with every number a float64, as it is once
// it is a google.protobuf.Struct again.
func toDoubles(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = toDoubles(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = toDoubles(e)
		}
		return out
	case int64:
		return float64(t)
	}
	return v
}

// encodeJSON prints v for the host: numbers as doubles (so 3, never 3.0),
// no HTML escaping.
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(toDoubles(v)); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// deepCopy copies maps and slices of a JSON-like value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
