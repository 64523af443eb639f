package main

// Reading the rendered templates: a stream of YAML or JSON documents,
// decoded as upstream does with k8s.io/apimachinery's YAMLOrJSONDecoder
// into unstructured objects (YAML 1.1 scalars, so yes is true; integers as
// int64). A YAML error is reported with the line in the whole output, the
// document number and the line within it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
)

// object is one rendered document, decoded the way unstructured.Unstructured
// decodes itself: a JSON object that must have a kind.
type object struct {
	content map[string]any
}

func (o *object) UnmarshalJSON(data []byte) error {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		return err
	}
	o.content = m
	if _, kind := groupVersionKind(m); kind == "" {
		return fmt.Errorf("Object 'Kind' is missing in '%s'", data) //nolint:staticcheck // upstream's wording
	}
	return nil
}

// stringField is a top-level string field, "" when absent or not a string.
func stringField(obj map[string]any, field string) string {
	s, _ := obj[field].(string)
	return s
}

// groupVersionKind splits apiVersion as Kubernetes does; an apiVersion
// with more than one slash gives no group, version or kind at all.
func groupVersionKind(obj map[string]any) (gv, kind string) {
	apiVersion := stringField(obj, "apiVersion")
	switch {
	case apiVersion == "" || apiVersion == "/":
		return "/", stringField(obj, "kind")
	case strings.Count(apiVersion, "/") == 0:
		return "/" + apiVersion, stringField(obj, "kind")
	case strings.Count(apiVersion, "/") == 1:
		return apiVersion, stringField(obj, "kind")
	}
	return "/", ""
}

// decodeManifests splits the rendered output into objects.
func decodeManifests(rendered string) ([]map[string]any, error) {
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(rendered), 1024)
	lines := strings.Split(rendered, "\n")
	start := nextDocument(lines, 1)
	doc := 0
	var objs []map[string]any
	for {
		o := &object{}
		if err := dec.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("cannot decode manifest: %w", yamlErrorInContext(err, start, doc, lines))
		}
		if o == nil {
			// An empty document (or one of comments only).
			continue
		}
		if err := checkAnnotations(o.content); err != nil {
			return nil, err
		}
		objs = append(objs, o.content)
		start = nextDocument(lines, start)
		doc++
	}
}

// nextDocument returns the 1-based line of the first "---" after line
// from, or from when there is none.
func nextDocument(lines []string, from int) int {
	for i := from + 1; i <= len(lines); i++ {
		if strings.TrimSpace(lines[i-1]) == "---" {
			return i
		}
	}
	return from
}

// yamlErrorInContext rewrites a "yaml: line N:" error to give the line in
// the whole output, the document, and the text of the line.
func yamlErrorInContext(err error, start, doc int, lines []string) error {
	const prefix = "error converting YAML to JSON: yaml: line %d:"
	var rel int
	if n, scanErr := fmt.Sscanf(err.Error(), prefix, &rel); scanErr != nil || n != 1 {
		return err
	}
	abs := start + rel
	if abs-1 < 0 || abs-1 >= len(lines) {
		return err
	}
	msg := ""
	full := err.Error()
	head := fmt.Sprintf(prefix, rel)
	if i := strings.Index(full, head); i >= 0 {
		msg = strings.TrimSpace(full[i+len(head):])
	}
	near := strings.TrimSpace(lines[abs-1])
	if len(near) > 80 {
		near = near[:80] + "..."
	}
	return fmt.Errorf("error converting YAML to JSON: yaml: line %d (document %d, line %d) near: '%s': %s", abs, doc+1, rel, near, msg)
}

// checkAnnotations rejects annotations that are not all strings, which
// later steps would misread.
func checkAnnotations(obj map[string]any) error {
	_, _, err := annotationsOf(obj)
	if err == nil {
		return nil
	}
	var name any
	if m, ok := nestedMap(obj); ok {
		name = m[annotationResourceName]
	}
	gv, kind := groupVersionKind(obj)
	return fmt.Errorf("invalid annotations in resource '%s, Kind=%s resource-name=%v': %w", gv, kind, name, err)
}

// nestedMap returns metadata.annotations when it is an object.
func nestedMap(obj map[string]any) (map[string]any, bool) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	m, ok := meta["annotations"].(map[string]any)
	return m, ok
}

// annotationsOf reads metadata.annotations as a map of strings, with
// apimachinery's wording when it is not one.
func annotationsOf(obj map[string]any) (map[string]string, bool, error) {
	const path = ".metadata.annotations"
	meta, present := obj["metadata"]
	if !present || meta == nil {
		return nil, false, nil
	}
	metaMap, ok := meta.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("%s accessor error: %v is of the type %T, expected map[string]interface{}", path, meta, meta)
	}
	raw, present := metaMap["annotations"]
	if !present {
		return nil, false, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("%s accessor error: %v is of the type %T, expected map[string]interface{}", path, raw, raw)
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		s, ok := m[k].(string)
		if !ok {
			return nil, false, fmt.Errorf("%s accessor error: contains non-string value in the map under key %q: %v is of the type %T, expected string", path, k, m[k], m[k])
		}
		out[k] = s
	}
	return out, true, nil
}
