package main

// The step input, gotemplating.fn.crossplane.io/v1beta1 GoTemplate.
//
// Upstream reads it with function-sdk-go's request.GetInput, which decodes
// the input strictly (github.com/go-json-experiment/json with
// RejectUnknownMembers): member names match exactly, an unknown one or a
// value of the wrong JSON kind is an error, null leaves a field unset, and
// members are visited in the sorted order protojson prints them in. The
// decoder here follows those rules and words its errors the same way, for
// the fields of GoTemplate and the common ones of its metadata.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Template sources.
const (
	sourceInline      = "Inline"
	sourceFileSystem  = "FileSystem"
	sourceEnvironment = "Environment"
)

type goTemplate struct {
	Delims      *delims
	Source      string
	Inline      *inlineSource
	FileSystem  *fileSystemSource
	Environment *environmentSource
	Options     *[]string
}

type delims struct {
	Left, Right *string
}

type inlineSource struct {
	Template  string
	Templates []string
}

type fileSystemSource struct {
	DirPath string
}

type environmentSource struct {
	Key string
}

const inputErrorPrefix = "cannot get Function input from *v1.RunFunctionRequest: " +
	"cannot get function input *v1beta1.GoTemplate from *v1.RunFunctionRequest: " +
	"cannot unmarshal JSON from *structpb.Struct into *v1beta1.GoTemplate: "

// readInput decodes the step input; nil input is an empty GoTemplate.
func readInput(text *string) (*goTemplate, error) {
	in := &goTemplate{}
	if text == nil {
		return in, nil
	}
	v, err := parseObject(*text)
	if err != nil {
		return nil, hostError{fmt.Errorf("input: %w", err)}
	}
	if err := in.decode(v); err != nil {
		return nil, fmt.Errorf("%s%w", inputErrorPrefix, err)
	}
	return in, nil
}

// jsonKind names a value's JSON kind as the decoder's errors do.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		return "number"
	}
}

func kindError(v any, goType string) error {
	return fmt.Errorf("json: cannot unmarshal JSON %s into Go value of type %s", jsonKind(v), goType)
}

func unknownName(goType, name string) error {
	return fmt.Errorf("json: cannot unmarshal Go value of type %s: unknown name %s", goType, strconv.Quote(name))
}

// members decodes an object (or null) member by member, in sorted order;
// fields maps each known name to its decoder.
func members(v any, goType string, fields map[string]func(any) error) error {
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return kindError(v, goType)
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		decode, known := fields[name]
		if !known {
			return unknownName(goType, name)
		}
		if err := decode(obj[name]); err != nil {
			return err
		}
	}
	return nil
}

func intoString(dst *string, goType string) func(any) error {
	return func(v any) error {
		switch t := v.(type) {
		case nil:
			*dst = ""
		case string:
			*dst = t
		default:
			return kindError(v, goType)
		}
		return nil
	}
}

func intoStringPtr(dst **string) func(any) error {
	return func(v any) error {
		switch t := v.(type) {
		case nil:
			*dst = nil
		case string:
			*dst = &t
		default:
			return kindError(v, "string")
		}
		return nil
	}
}

func intoStrings(dst *[]string) func(any) error {
	return func(v any) error {
		if v == nil {
			*dst = nil
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return kindError(v, "[]string")
		}
		out := make([]string, len(list))
		for i, e := range list {
			if err := intoString(&out[i], "string")(e); err != nil {
				return err
			}
		}
		*dst = out
		return nil
	}
}

func (in *goTemplate) decode(v any) error {
	var ignored string
	return members(v, "v1beta1.GoTemplate", map[string]func(any) error{
		"apiVersion": intoString(&ignored, "string"),
		"kind":       intoString(&ignored, "string"),
		"metadata":   checkObjectMeta,
		"source":     intoString(&in.Source, "v1beta1.TemplateSource"),
		"delims": func(v any) error {
			if v == nil {
				in.Delims = nil
				return nil
			}
			in.Delims = &delims{}
			return members(v, "v1beta1.Delims", map[string]func(any) error{
				"left":  intoStringPtr(&in.Delims.Left),
				"right": intoStringPtr(&in.Delims.Right),
			})
		},
		"inline": func(v any) error {
			if v == nil {
				in.Inline = nil
				return nil
			}
			in.Inline = &inlineSource{}
			return members(v, "v1beta1.TemplateSourceInline", map[string]func(any) error{
				"template":  intoString(&in.Inline.Template, "string"),
				"templates": intoStrings(&in.Inline.Templates),
			})
		},
		"fileSystem": func(v any) error {
			if v == nil {
				in.FileSystem = nil
				return nil
			}
			in.FileSystem = &fileSystemSource{}
			return members(v, "v1beta1.TemplateSourceFileSystem", map[string]func(any) error{
				"dirPath": intoString(&in.FileSystem.DirPath, "string"),
			})
		},
		"environment": func(v any) error {
			if v == nil {
				in.Environment = nil
				return nil
			}
			in.Environment = &environmentSource{}
			return members(v, "v1beta1.TemplateSourceEnvironment", map[string]func(any) error{
				"key": intoString(&in.Environment.Key, "string"),
			})
		},
		"options": func(v any) error {
			if v == nil {
				in.Options = nil
				return nil
			}
			var opts []string
			if err := intoStrings(&opts)(v); err != nil {
				return err
			}
			in.Options = &opts
			return nil
		},
	})
}

// checkObjectMeta checks the input's metadata as metav1.ObjectMeta would
// be decoded; nothing of it is used.
func checkObjectMeta(v any) error {
	var s string
	var list []string
	str := func(goType string) func(any) error { return intoString(&s, goType) }
	stringMap := func(v any) error {
		if v == nil {
			return nil
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return kindError(v, "map[string]string")
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := intoString(&s, "string")(obj[k]); err != nil {
				return err
			}
		}
		return nil
	}
	objects := func(listType, itemType string) func(any) error {
		return func(v any) error {
			if v == nil {
				return nil
			}
			items, ok := v.([]any)
			if !ok {
				return kindError(v, listType)
			}
			for _, item := range items {
				if _, ok := item.(map[string]any); !ok && item != nil {
					return kindError(item, itemType)
				}
			}
			return nil
		}
	}
	return members(v, "v1.ObjectMeta", map[string]func(any) error{
		"name":                       str("string"),
		"generateName":               str("string"),
		"namespace":                  str("string"),
		"selfLink":                   str("string"),
		"uid":                        str("types.UID"),
		"resourceVersion":            str("string"),
		"generation":                 checkInt64,
		"creationTimestamp":          checkTime,
		"deletionTimestamp":          checkTime,
		"deletionGracePeriodSeconds": checkInt64,
		"labels":                     stringMap,
		"annotations":                stringMap,
		"ownerReferences":            objects("[]v1.OwnerReference", "v1.OwnerReference"),
		"finalizers":                 intoStrings(&list),
		"managedFields":              objects("[]v1.ManagedFieldsEntry", "v1.ManagedFieldsEntry"),
	})
}

func checkInt64(v any) error {
	switch t := v.(type) {
	case nil, int64:
		return nil
	case float64:
		text := formatDouble(t)
		_, err := strconv.ParseInt(text, 10, 64)
		reason := err
		if ne, ok := err.(*strconv.NumError); ok {
			reason = ne.Err
		}
		return fmt.Errorf("json: cannot unmarshal JSON number into Go value of type int64: cannot parse %q as signed integer: %w", text, reason)
	default:
		return kindError(v, "int64")
	}
}

// checkTime decodes a metav1.Time: null, or an RFC 3339 string.
func checkTime(v any) error {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if _, err := time.Parse(time.RFC3339, t); err != nil {
			return fmt.Errorf("json: cannot unmarshal JSON string into Go value of type v1.Time: %w", err)
		}
		return nil
	default:
		var s string
		raw, _ := json.Marshal(toDoubles(v))
		err := json.Unmarshal(raw, &s)
		return fmt.Errorf("json: cannot unmarshal JSON %s into Go value of type v1.Time: %w", jsonKind(v), err)
	}
}
