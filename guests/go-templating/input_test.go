package main

import (
	"reflect"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

func TestReadInput(t *testing.T) {
	cases := map[string]struct {
		in   map[string]any
		want *goTemplate
	}{
		"AllFields": {
			in: map[string]any{
				"apiVersion": "gotemplating.fn.crossplane.io/v1beta1", "kind": "GoTemplate",
				"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "b"}, "generation": 3, "creationTimestamp": "2024-01-01T00:00:00Z"},
				"source":   "Inline", "inline": map[string]any{"template": "t", "templates": []any{"a", "b"}},
				"fileSystem": map[string]any{"dirPath": "/d"}, "environment": map[string]any{"key": "k"},
				"delims": map[string]any{"left": "[[", "right": "]]"}, "options": []any{"missingkey=error"},
			},
			want: &goTemplate{
				Source: "Inline", Inline: &inlineSource{Template: "t", Templates: []string{"a", "b"}},
				FileSystem: &fileSystemSource{DirPath: "/d"}, Environment: &environmentSource{Key: "k"},
				Delims: &delims{Left: ptr("[["), Right: ptr("]]")}, Options: &[]string{"missingkey=error"},
			},
		},
		"NullsLeaveFieldsUnset": {
			in:   map[string]any{"source": nil, "inline": nil, "options": nil, "delims": nil},
			want: &goTemplate{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readInput(input(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The input is decoded strictly, as function-sdk-go does.
func TestInputErrors(t *testing.T) {
	const prefix = "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1beta1.GoTemplate from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.GoTemplate: json: "
	cases := map[string]struct {
		in   map[string]any
		want string
	}{
		"UnknownField": {
			in:   map[string]any{"source": "Inline", "zzz": 1},
			want: `cannot unmarshal Go value of type v1beta1.GoTemplate: unknown name "zzz"`,
		},
		"NamesAreCaseSensitive": {
			in:   map[string]any{"Source": "Inline"},
			want: `cannot unmarshal Go value of type v1beta1.GoTemplate: unknown name "Source"`,
		},
		"FirstUnknownInSortedOrder": {
			in:   map[string]any{"source": "Inline", "b": 1, "a": 2},
			want: `cannot unmarshal Go value of type v1beta1.GoTemplate: unknown name "a"`,
		},
		"UnknownInlineField": {
			in:   map[string]any{"source": "Inline", "inline": map[string]any{"tempalte": "x"}},
			want: `cannot unmarshal Go value of type v1beta1.TemplateSourceInline: unknown name "tempalte"`,
		},
		"UnknownDelimsField": {
			in:   map[string]any{"source": "Inline", "delims": map[string]any{"l": "x"}},
			want: `cannot unmarshal Go value of type v1beta1.Delims: unknown name "l"`,
		},
		"SourceNotAString": {
			in:   map[string]any{"source": 1},
			want: "cannot unmarshal JSON number into Go value of type v1beta1.TemplateSource",
		},
		"SourceAnObject": {
			in:   map[string]any{"source": map[string]any{"a": 1}},
			want: "cannot unmarshal JSON object into Go value of type v1beta1.TemplateSource",
		},
		"TemplatesNotAList": {
			in:   map[string]any{"source": "Inline", "inline": map[string]any{"templates": "x"}},
			want: "cannot unmarshal JSON string into Go value of type []string",
		},
		"InlineAList": {
			in:   map[string]any{"source": "Inline", "inline": []any{}},
			want: "cannot unmarshal JSON array into Go value of type v1beta1.TemplateSourceInline",
		},
		"OptionNotAString": {
			in:   map[string]any{"source": "Inline", "options": []any{1}},
			want: "cannot unmarshal JSON number into Go value of type string",
		},
		"UnknownMetadataField": {
			in:   map[string]any{"source": "Inline", "metadata": map[string]any{"name": "x", "foo": 1}},
			want: `cannot unmarshal Go value of type v1.ObjectMeta: unknown name "foo"`,
		},
		"FractionalGeneration": {
			in:   map[string]any{"source": "Inline", "metadata": map[string]any{"generation": 1.5}},
			want: `cannot unmarshal JSON number into Go value of type int64: cannot parse "1.5" as signed integer: invalid syntax`,
		},
		"BadTimestamp": {
			in:   map[string]any{"source": "Inline", "metadata": map[string]any{"creationTimestamp": "bad"}},
			want: `cannot unmarshal JSON string into Go value of type v1.Time: parsing time "bad" as "2006-01-02T15:04:05Z07:00": cannot parse "bad" as "2006"`,
		},
		"LabelNotAString": {
			in:   map[string]any{"source": "Inline", "metadata": map[string]any{"labels": map[string]any{"a": 1}}},
			want: "cannot unmarshal JSON number into Go value of type string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, &component.Request{Input: input(tc.in)})
			sameResponse(t, rsp, fatalResponse(component.State{}, "{}", prefix+tc.want))
		})
	}
}

func TestInputThatIsNotAnObjectIsAnError(t *testing.T) {
	text := "[]"
	if _, failure := runFunction(&component.Request{Input: &text}); failure == nil || failure.Kind != component.ErrorInvalidInput {
		t.Errorf("got %+v, want an invalid-input error", failure)
	}
}
