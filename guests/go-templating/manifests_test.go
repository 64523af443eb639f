package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// How rendered output is split into objects: YAML (1.1) or JSON documents.
func TestRenderedDocuments(t *testing.T) {
	cm := func(name, body string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: " + name + "\n" + body
	}
	cases := map[string]struct {
		tmpl    string
		options []string
		want    map[string]string // resource name -> JSON
	}{
		"YAML11BooleansAndOctal": {
			tmpl: cm("a", "data:\n  yes: yes\n  off: off\n  octal: 0777\n  under: 1_000\n  tilde: ~\n  quoted: \"yes\"\n"),
			want: map[string]string{"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"a"},"data":{"true":true,"false":false,"octal":511,"under":1000,"tilde":null,"quoted":"yes"}}`},
		},
		"MissingValuePrintsNoValue": {
			tmpl: cm("a", "data:\n  v: \"{{ .missing }}\"\n"),
			want: map[string]string{"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"a"},"data":{"v":"<no value>"}}`},
		},
		"MissingKeyZeroOption": {
			tmpl:    cm("a", "data:\n  v: \"{{ .missing }}\"\n"),
			options: []string{"missingkey=zero"},
			want:    map[string]string{"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"a"},"data":{"v":"<no value>"}}`},
		},
		"EmptyAndCommentDocumentsAreSkipped": {
			tmpl: "---\n---\n# only a comment\n---\n" + cm("a", "") + "---\n\n---\n" + cm("b", ""),
			want: map[string]string{
				"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"a"}}`,
				"b": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"b"}}`,
			},
		},
		"JSONStream": {
			tmpl: `{"apiVersion":"v1","kind":"A","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"a"}}}` + "\n" +
				`{"apiVersion":"v1","kind":"B","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"b"}},"n":12345678901234567}`,
			want: map[string]string{
				"a": `{"apiVersion":"v1","kind":"A","metadata":{"annotations":{}}}`,
				"b": `{"apiVersion":"v1","kind":"B","metadata":{"annotations":{}},"n":12345678901234568}`,
			},
		},
		"JSONThenYAML": {
			tmpl: `{"apiVersion":"v1","kind":"A","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"a"}}}` + "\n---\n" + cm("b", ""),
			want: map[string]string{
				"a": `{"apiVersion":"v1","kind":"A","metadata":{"annotations":{}}}`,
				"b": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"b"}}`,
			},
		},
		"OtherAnnotationsStay": {
			tmpl: cm("a", "") + "    other: kept\n",
			want: map[string]string{"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"other":"kept"},"name":"a"}}`},
		},
		"NothingRendered": {tmpl: "{{/* nothing */}}"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var opts map[string]any
			if tc.options != nil {
				opts = map[string]any{"options": tc.options}
			}
			rsp := run(t, withXR(inline(tc.tmpl, opts)))
			if len(rsp.Results) > 0 {
				t.Fatalf("results: %s", show(rsp.Results))
			}
			got := map[string]string{}
			for _, r := range rsp.Desired.Resources {
				got[r.Name] = r.Resource.JSON
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got resources %v, want %v", got, tc.want)
			}
			for name, want := range tc.want {
				sameJSON(t, name, got[name], want)
			}
		})
	}
}

func TestRenderedDocumentErrors(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: a\n"
	cases := map[string]struct {
		tmpl    string
		options []string
		want    string
	}{
		"MissingKeyErrorOption": {
			tmpl:    "a: {{ .observed.composite.resource.spec.nothing }}",
			options: []string{"missingkey=error"},
			want:    `cannot execute template: template: manifests:1:15: executing "manifests" at <.observed.composite.resource.spec.nothing>: map has no entry for key "nothing"`,
		},
		"ExecutionErrorHasPosition": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ index .observed.composite.resource.spec.l 10 }}\n",
			want: `cannot execute template: template: manifests:4:11: executing "manifests" at <index .observed.composite.resource.spec.l 10>: error calling index: index of untyped nil`,
		},
		"YAMLErrorInSecondDocument": {
			tmpl: cm + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\n  bad: : x\n",
			want: "cannot decode manifest: error converting YAML to JSON: yaml: line 12 (document 2, line 5) near: 'bad: : x': mapping values are not allowed in this context",
		},
		"EmptyDocumentsDoNotCount": {
			tmpl: "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [\n",
			want: "cannot decode manifest: error converting YAML to JSON: yaml: line 7 (document 1, line 4) near: 'name: [': did not find expected node content",
		},
		"LongLineIsCutAt80Bytes": {
			tmpl: cm + "---\napiVersion: v1\nkind: X\nmetadata:\n  name: " + strings.Repeat("y", 100) + " bad: : x\n",
			want: "cannot decode manifest: error converting YAML to JSON: yaml: line 11 (document 2, line 4) near: 'name: " + strings.Repeat("y", 74) + "...': mapping values are not allowed in this context",
		},
		"ErrorPastTheLastLineKeepsYAMLWording": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"unterminated\n  other: 1\n",
			want: "cannot decode manifest: error converting YAML to JSON: yaml: line 6: found unexpected end of stream",
		},
		"BadSeparator": {
			tmpl: cm + "--- foo\n" + cm,
			want: "cannot decode manifest: invalid Yaml document separator: foo",
		},
		"YAMLWithoutKind": {
			tmpl: "apiVersion: v1\nmetadata:\n  name: x\n",
			want: `cannot decode manifest: error unmarshaling JSON: while decoding JSON: Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"x"}}'`,
		},
		"APIVersionWithTwoSlashesHasNoKind": {
			tmpl: "apiVersion: a/b/c\nkind: X\n",
			want: `cannot decode manifest: error unmarshaling JSON: while decoding JSON: Object 'Kind' is missing in '{"apiVersion":"a/b/c","kind":"X"}'`,
		},
		"ListDocument": {
			tmpl: "- a\n- b\n",
			want: "cannot decode manifest: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
		},
		"JSONSyntaxError": {
			tmpl: `{"apiVersion":"v1","kind":"ConfigMap",,}`,
			want: "cannot decode manifest: json: offset 39: invalid character ',' looking for beginning of object key string",
		},
		"IntegerAnnotation": {
			tmpl: cm + "    foo: 1\n",
			want: `invalid annotations in resource '/v1, Kind=ConfigMap resource-name=a': .metadata.annotations accessor error: contains non-string value in the map under key "foo": 1 is of the type int64, expected string`,
		},
		"YAML11BooleanAnnotation": {
			tmpl: "apiVersion: example.org/v1\nkind: CD\nmetadata:\n  annotations:\n    foo: yes\n",
			want: `invalid annotations in resource 'example.org/v1, Kind=CD resource-name=<nil>': .metadata.annotations accessor error: contains non-string value in the map under key "foo": true is of the type bool, expected string`,
		},
		"NumericResourceName": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: 3\n",
			want: `invalid annotations in resource '/v1, Kind=ConfigMap resource-name=3': .metadata.annotations accessor error: contains non-string value in the map under key "gotemplating.fn.crossplane.io/composition-resource-name": 3 is of the type int64, expected string`,
		},
		"AnnotationsNotAMap": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: hello\n",
			want: `invalid annotations in resource '/v1, Kind=ConfigMap resource-name=<nil>': .metadata.annotations accessor error: hello is of the type string, expected map[string]interface{}`,
		},
		"NullAnnotations": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n",
			want: `invalid annotations in resource '/v1, Kind=ConfigMap resource-name=<nil>': .metadata.annotations accessor error: <nil> is of the type <nil>, expected map[string]interface{}`,
		},
		"MetadataNotAMap": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata: hello\n",
			want: `invalid annotations in resource '/v1, Kind=ConfigMap resource-name=<nil>': .metadata.annotations accessor error: hello is of the type string, expected map[string]interface{}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var opts map[string]any
			if tc.options != nil {
				opts = map[string]any{"options": tc.options}
			}
			req := withXR(inline(tc.tmpl, opts))
			sameResponse(t, run(t, req), fatalResponse(xrState(), "{}", tc.want))
		})
	}
}

func TestNextDocument(t *testing.T) {
	lines := []string{"", "---", "a: 1", " --- ", "b: 2"}
	cases := []struct{ from, want int }{{1, 2}, {2, 4}, {4, 4}}
	for _, tc := range cases {
		if got := nextDocument(lines, tc.from); got != tc.want {
			t.Errorf("nextDocument(%d) = %d, want %d", tc.from, got, tc.want)
		}
	}
}

func TestGroupVersionKind(t *testing.T) {
	cases := map[string][2]string{
		"example.org/v1": {"example.org/v1", "K"},
		"v1":             {"/v1", "K"},
		"":               {"/", "K"},
		"a/b/c":          {"/", ""},
	}
	for apiVersion, want := range cases {
		gv, kind := groupVersionKind(map[string]any{"apiVersion": apiVersion, "kind": "K"})
		if got := [2]string{gv, kind}; !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v, want %v", apiVersion, got, want)
		}
	}
	_ = component.ReadyTrue
}
