package main

import (
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// Context documents merge into the pipeline context, as upstream's
// MergeContext does: objects merge key by key, anything else (lists, empty
// values, null) replaces what was there.
func TestContextDocuments(t *testing.T) {
	ctxDoc := func(data string) string { return metaDoc + `"kind":"Context","data":` + data + "}\n" }
	cases := map[string]struct {
		context string
		docs    string
		want    string
	}{
		"NoContextAtKey": {
			docs: ctxDoc(`{"hello":"world"}`),
			want: `{"hello":"world"}`,
		},
		"SourceOverwritesDestination": {
			context: `{"apiextensions.crossplane.io/environment":{"complex":{"a":"b","c":{"d":"e","f":"1","overWrite":"fromContext"}}}}`,
			docs:    ctxDoc(`{"newKey":"newValue","apiextensions.crossplane.io/environment":{"complex":{"c":{"overWrite":"fromFunction"}}}}`),
			want:    `{"apiextensions.crossplane.io/environment":{"complex":{"a":"b","c":{"d":"e","f":"1","overWrite":"fromFunction"}}},"newKey":"newValue"}`,
		},
		"LaterDocumentsMergeIntoEarlierOnes": {
			context: `{"keep":1.5}`,
			docs:    ctxDoc(`{"a":{"x":1,"y":"keep","z":[1,2]},"n":5}`) + ctxDoc(`{"a":{"x":2,"y":"","z":[3],"w":null},"n":0}`),
			want:    `{"keep":1.5,"a":{"x":2,"y":"","z":[3],"w":null},"n":0}`,
		},
		"EmptyDataChangesNothing": {
			context: `{"a":1}`,
			docs:    ctxDoc(`{}`) + ctxDoc(`null`),
			want:    `{"a":1}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := withXR(inline(tc.docs, nil))
			req.Context = tc.context
			sameResponse(t, run(t, req), response(xrState(), tc.want))
		})
	}
}

func TestContextDocumentErrors(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want string
	}{
		"MissingData": {
			doc:  metaDoc + `"kind":"Context"}`,
			want: "cannot get Contexts from input: data: no such field",
		},
		"ListData": {
			doc:  metaDoc + `"kind":"Context","data":[1]}`,
			want: "cannot get Contexts from input: cannot unmarshal value from JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sameResponse(t, run(t, withXR(inline(tc.doc, nil))), fatalResponse(xrState(), "{}", tc.want))
		})
	}
}

// A failure after a Context document still returns the merged context, as
// upstream's response carries it.
func TestContextSurvivesALaterFailure(t *testing.T) {
	req := withXR(inline(metaDoc+`"kind":"Context","data":{"new":1}}`+"\n"+metaDoc+`"kind":"Bogus"}`, nil))
	req.Context = `{"a":1}`
	want := fatalResponse(xrState(), `{"a":1,"new":1}`, `invalid kind "Bogus" for apiVersion "meta.gotemplating.fn.crossplane.io/v1alpha1" - must be one of CompositeConnectionDetails, Context or ExtraResources`)
	sameResponse(t, run(t, req), want)
}

// Required resources are copied into the context under
// apiextensions.crossplane.io/extra-resources, over the entries there.
func TestRequiredResourcesInContext(t *testing.T) {
	item := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"num":7}`
	required := []component.RequiredResources{{Name: "r1", Items: []string{item}}, {Name: "empty"}}
	cases := map[string]struct {
		context string
		docs    string
		want    string
	}{
		"AddsEveryRequirement": {
			want: `{"apiextensions.crossplane.io/extra-resources":{"r1":{"items":[{"resource":` + item + `}]},"empty":{}}}`,
		},
		"ReplacesEntriesOfTheSameName": {
			docs: metaDoc + `"kind":"Context","data":{"apiextensions.crossplane.io/extra-resources":{"kept":{"items":[]},"r1":"replaced"}}}`,
			want: `{"apiextensions.crossplane.io/extra-resources":{"kept":{"items":[]},"r1":{"items":[{"resource":` + item + `}]},"empty":{}}}`,
		},
		"ReplacesAKeyThatIsNotAnObject": {
			context: `{"apiextensions.crossplane.io/extra-resources":"text"}`,
			want:    `{"apiextensions.crossplane.io/extra-resources":{"r1":{"items":[{"resource":` + item + `}]},"empty":{}}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := withXR(inline(tc.docs+"{{/* */}}", nil))
			req.Context = tc.context
			req.RequiredResources = required
			sameResponse(t, run(t, req), response(xrState(), tc.want))
		})
	}
}

func TestTemplatesSeeRequiredResourcesBothWays(t *testing.T) {
	req := withXR(inline(configMap(
		`required: "{{ len .requiredResources.cfg.items }}"`,
		`extra: "{{ len .extraResources.cfg.items }}"`,
		`fromContext: "{{ len (getExtraResourcesFromContext . "prev") }}"`,
	), nil))
	req.RequiredResources = []component.RequiredResources{{Name: "cfg", Items: []string{`{"a":1}`, `{"b":2}`}}}
	req.Context = `{"apiextensions.crossplane.io/extra-resources":{"prev":{"items":[{"resource":{"c":3}}]}}}`
	got := dataOf(t, renderOne(t, req))
	if got["required"] != "2" || got["extra"] != "2" || got["fromContext"] != "1" {
		t.Errorf("got %v", got)
	}
}
