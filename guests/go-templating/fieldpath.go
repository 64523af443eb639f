package main

// A small reading of crossplane-runtime's field paths, enough for what
// upstream does with them: getComposedResource and friends build a path
// such as observed.resources[NAME]resource and read it, and the
// rendered-object handling reads and writes top-level fields. A name in
// brackets that is an unsigned 32-bit number is an array index, quotes
// around a field are dropped, and a malformed path reads nothing, as
// upstream's parser has it.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
)

type segment struct {
	field   string
	index   uint
	isIndex bool
}

func fieldSegment(s string) segment {
	return segment{field: strings.Trim(s, `'"`)}
}

func fieldOrIndexSegment(s string) segment {
	if i, err := strconv.ParseUint(s, 10, 32); err == nil {
		return segment{index: uint(i), isIndex: true}
	}
	return fieldSegment(s)
}

// parsePath splits a field path into segments; ok is false when the path
// is malformed (a stray bracket or period).
func parsePath(path string) (segs []segment, ok bool) {
	i, start := 0, 0
	flush := func() {
		if i > start {
			segs = append(segs, fieldSegment(path[start:i]))
		}
		start = i
	}
	for i < len(path) {
		switch path[i] {
		case ']':
			return nil, false
		case '.':
			flush()
			if i == 0 || i == len(path)-1 {
				return nil, false
			}
			i++
			start = i
			if next := path[i]; next == '.' || next == '[' {
				return nil, false
			}
		case '[':
			flush()
			closing := strings.IndexByte(path[i:], ']')
			if closing < 0 {
				return nil, false
			}
			inner := path[i+1 : i+closing]
			if inner == "" || strings.IndexByte(inner, '[') >= 0 {
				return nil, false
			}
			segs = append(segs, fieldOrIndexSegment(inner))
			i += closing + 1
			start = i
		default:
			i++
		}
	}
	flush()
	return segs, true
}

// notFound is the error for a path that leads nowhere; other errors mean
// the object has the wrong shape.
type notFound struct{ msg string }

func (e notFound) Error() string { return e.msg }

func pathString(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		switch {
		case s.isIndex:
			fmt.Fprintf(&b, "[%d]", s.index)
		case s.field == "*" || strings.Contains(s.field, "."):
			fmt.Fprintf(&b, "[%s]", s.field)
		default:
			b.WriteString("." + s.field)
		}
	}
	return strings.TrimPrefix(b.String(), ".")
}

// lookup reads the value at segs in v.
func lookup(v any, segs []segment) (any, error) {
	for i, s := range segs {
		if s.isIndex {
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: not an array", pathString(segs[:i]))
			}
			if s.index >= uint(len(list)) {
				return nil, notFound{pathString(segs[:i+1]) + ": no such element"}
			}
			v = list[s.index]
			continue
		}
		switch obj := v.(type) {
		case map[string]any:
			next, ok := obj[s.field]
			if !ok {
				return nil, notFound{pathString(segs[:i+1]) + ": no such field"}
			}
			v = next
		case nil:
			return nil, notFound{pathString(segs[:i]) + ": expected map, got nil"}
		default:
			return nil, fmt.Errorf("%s: not an object", pathString(segs[:i]))
		}
	}
	return v, nil
}

// getValueInto reads the value at path in obj into out through JSON, with
// integers kept as int64, as crossplane-runtime's GetValueInto does.
func getValueInto(obj map[string]any, path string, out any) error {
	segs, ok := parsePath(path)
	if !ok {
		return fmt.Errorf("cannot parse path %q", path)
	}
	v, err := lookup(obj, segs)
	if err != nil {
		return err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot marshal value to JSON: %w", err)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, out); err != nil {
		return fmt.Errorf("cannot unmarshal value from JSON: %w", err)
	}
	return nil
}

// setTopLevel sets a top-level field of obj to a JSON copy of v, as
// crossplane-runtime's SetValue does for a one-segment path.
func setTopLevel(obj map[string]any, field string, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot marshal value to JSON: %w", err)
	}
	var clean any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &clean); err != nil {
		return fmt.Errorf("cannot unmarshal value from JSON: %w", err)
	}
	obj[field] = clean
	return nil
}
