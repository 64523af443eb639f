package main

import (
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// How rendered objects change the desired state.
func TestDesiredState(t *testing.T) {
	xr := `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"x"}}`
	cm := func(name, extra string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: " + name + "\n" + extra
	}
	cases := map[string]struct {
		tmpl    string
		desired component.State
		want    *component.Response
	}{
		"EarlierDesiredResourcesStayWithTheirReadiness": {
			tmpl: cm("new", ""),
			desired: component.State{Composite: &component.Resource{JSON: xr, Ready: component.ReadyTrue}, Resources: []component.ComposedResource{
				{Name: "old", Resource: component.Resource{JSON: `{"apiVersion":"v1","kind":"K","n":9007199254740993}`, Ready: component.ReadyFalse,
					ConnectionDetails: []component.ConnectionDetail{{Key: "k", Value: []byte("v")}}}},
			}},
			// The composite's readiness is not carried over; composed
			// resources' connection details are not either.
			want: response(component.State{Composite: resource(xr), Resources: []component.ComposedResource{
				{Name: "new", Resource: *resource(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"new"}}`)},
				{Name: "old", Resource: component.Resource{JSON: `{"apiVersion":"v1","kind":"K","n":9007199254740992}`, Ready: component.ReadyFalse}},
			}}, "{}"),
		},
		"RenderedResourceResetsReadinessOfTheSameName": {
			tmpl: cm("same", ""),
			desired: component.State{Composite: resource(xr), Resources: []component.ComposedResource{
				{Name: "same", Resource: component.Resource{JSON: `{"apiVersion":"v1","kind":"K"}`, Ready: component.ReadyTrue}},
			}},
			want: response(component.State{Composite: resource(xr), Resources: []component.ComposedResource{
				{Name: "same", Resource: *resource(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"same"}}`)},
			}}, "{}"),
		},
		"ReadyFalseAnnotationIsRemoved": {
			tmpl: cm("a", "") + "    gotemplating.fn.crossplane.io/ready: \"False\"\n    other: x\n",
			want: response(component.State{Composite: resource("{}"), Resources: []component.ComposedResource{
				{Name: "a", Resource: component.Resource{JSON: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"other":"x"},"name":"a"}}`, Ready: component.ReadyFalse}},
			}}, "{}"),
		},
		"EmptyNameAnnotationIsAName": {
			tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: \"\"\n",
			want: response(component.State{Composite: resource("{}"), Resources: []component.ComposedResource{
				{Name: "", Resource: *resource(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{}}}`)},
			}}, "{}"),
		},
		"CompositeStatusEmptyValuesAndNull": {
			tmpl:    "apiVersion: example.org/v1\nkind: XR\nstatus:\n  a: \"\"\n  d: [1]\n  e: {x: 1}\n  g: new\n",
			desired: component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR","status":{"a":"keep","d":[9,9],"e":{"y":2},"g":"old","h":true}}`)},
			want:    response(component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR","status":{"a":"","d":[1],"e":{"x":1,"y":2},"g":"new","h":true}}`)}, "{}"),
		},
		"CompositeStatusNullKeepsDesired": {
			tmpl:    "apiVersion: example.org/v1\nkind: XR\nstatus: null\n",
			desired: component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR","status":{"a":1}}`)},
			want:    response(component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR","status":{"a":1}}`)}, "{}"),
		},
		"CompositeDocumentWithoutDesiredCompositeSetsOnlyStatus": {
			tmpl: "apiVersion: example.org/v1\nkind: XR\nspec: {ignored: true}\nstatus: {a: 1}\n",
			want: response(component.State{Composite: resource(`{"status":{"a":1}}`)}, "{}"),
		},
		"OtherVersionOfTheCompositeKindIsComposed": {
			tmpl: "apiVersion: example.org/v2\nkind: XR\nstatus: {a: 1}\n",
			want: fatalResponse(component.State{}, "{}", `"XR" template is missing required "gotemplating.fn.crossplane.io/composition-resource-name" annotation`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &component.Request{
				Input:    inline(tc.tmpl, nil),
				Observed: component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"x"}}`)},
				Desired:  tc.desired,
			}
			sameResponse(t, run(t, req), tc.want)
		})
	}
}

func TestCompositeStatusErrors(t *testing.T) {
	cases := map[string]struct {
		tmpl    string
		desired string
		want    string
	}{
		"RenderedStatusNotAnObject": {
			tmpl:    "apiVersion: example.org/v1\nkind: XR\nstatus: hello\n",
			desired: `{"apiVersion":"example.org/v1","kind":"XR"}`,
			want:    "cannot get templated composite status: cannot unmarshal value from JSON: json: cannot unmarshal string into Go value of type map[string]interface {}",
		},
		"DesiredStatusNotAnObject": {
			tmpl:    "apiVersion: example.org/v1\nkind: XR\nstatus: {a: 1}\n",
			desired: `{"apiVersion":"example.org/v1","kind":"XR","status":"x"}`,
			want:    "cannot get desired composite status: cannot unmarshal value from JSON: json: cannot unmarshal string into Go value of type map[string]interface {}",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &component.Request{
				Input:    inline(tc.tmpl, nil),
				Observed: component.State{Composite: resource(`{"apiVersion":"example.org/v1","kind":"XR"}`)},
				Desired:  component.State{Composite: resource(tc.desired)},
			}
			sameResponse(t, run(t, req), fatalResponse(component.State{Composite: resource(tc.desired)}, "{}", tc.want))
		})
	}
}

func TestCompositeConnectionDetails(t *testing.T) {
	details := func(kv ...string) []component.ConnectionDetail {
		var out []component.ConnectionDetail
		for i := 0; i < len(kv); i += 2 {
			out = append(out, component.ConnectionDetail{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	cases := map[string]struct {
		doc     string
		earlier []component.ConnectionDetail
		want    []component.ConnectionDetail
	}{
		"AddedToEarlierDetails": {
			doc:     `"data":{"key":"dmFsdWU="}`,
			earlier: details("old", "o"),
			want:    details("key", "value", "old", "o"),
		},
		"BadBase64KeepsWhatDecodes": {
			doc:  `"data":{"a":"dmFsdWU","b":"!!"}`,
			want: details("a", "val", "b", ""),
		},
		"NonStringValueIgnoresTheDocument": {
			doc: `"data":{"a":"dmFsdWU=","b":1}`,
		},
		"MissingDataIsIgnored": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := metaDoc + `"kind":"CompositeConnectionDetails"`
			if tc.doc != "" {
				doc += "," + tc.doc
			}
			req := withXR(inline(doc+"}", nil))
			req.Desired.Composite.ConnectionDetails = tc.earlier
			rsp := run(t, req)
			sameResponse(t, rsp, response(component.State{Composite: &component.Resource{JSON: xrJSON, ConnectionDetails: tc.want}}, "{}"))
		})
	}
}

// Upstream adds connection details to the request's own map when it has
// one, so a later failure still shows them.
func TestConnectionDetailsSurviveALaterFailure(t *testing.T) {
	docs := metaDoc + `"kind":"CompositeConnectionDetails","data":{"new":"dmFsdWU="}}` + "\n" + metaDoc + `"kind":"Bogus"}`
	const msg = `invalid kind "Bogus" for apiVersion "meta.gotemplating.fn.crossplane.io/v1alpha1" - must be one of CompositeConnectionDetails, Context or ExtraResources`
	cases := map[string]struct {
		earlier []component.ConnectionDetail
		want    []component.ConnectionDetail
	}{
		"WithEarlierDetails": {
			earlier: []component.ConnectionDetail{{Key: "old", Value: []byte("o")}},
			want:    []component.ConnectionDetail{{Key: "new", Value: []byte("value")}, {Key: "old", Value: []byte("o")}},
		},
		"WithoutEarlierDetails": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := withXR(inline(docs, nil))
			req.Desired.Composite.ConnectionDetails = tc.earlier
			req.Desired.Composite.Ready = component.ReadyTrue
			want := fatalResponse(component.State{Composite: &component.Resource{JSON: xrJSON, ConnectionDetails: tc.want, Ready: component.ReadyTrue}}, "{}", msg)
			sameResponse(t, run(t, req), want)
		})
	}
}

func TestRequirements(t *testing.T) {
	extra := func(reqs string) string { return metaDoc + `"kind":"ExtraResources","requirements":` + reqs + "}\n" }
	cases := map[string]struct {
		docs string
		want []component.ResourceRequirement
		err  string
	}{
		"LabelSelectorDropsNamespace": {
			docs: extra(`{"l":{"apiVersion":"v1","kind":"ConfigMap","matchLabels":{"b":"2","a":"1"},"namespace":"ns"}}`),
			want: []component.ResourceRequirement{{Name: "l", Selector: component.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", MatchLabels: [][2]string{{"a", "1"}, {"b", "2"}}}}},
		},
		"NamespacedThenClusterScopedIsNoDuplicate": {
			docs: extra(`{"d":{"apiVersion":"v1","kind":"ConfigMap","matchName":"x","namespace":"ns"}}`) + extra(`{"d":{"apiVersion":"v1","kind":"ConfigMap","matchName":"y"}}`),
			want: []component.ResourceRequirement{{Name: "d", Selector: component.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", MatchName: ptr("y")}}},
		},
		"ClusterScopedThenNamespacedIsDuplicate": {
			docs: extra(`{"d":{"apiVersion":"v1","kind":"ConfigMap","matchName":"x"}}`) + extra(`{"d":{"apiVersion":"v1","kind":"ConfigMap","matchName":"y","namespace":"ns"}}`),
			err:  `duplicate extra resource key "d"`,
		},
		"MissingRequirements": {
			docs: metaDoc + `"kind":"ExtraResources"}`,
			err:  "cannot get extra resources requirements: requirements: no such field",
		},
		"WrongFieldType": {
			docs: extra(`{"a":{"apiVersion":1,"kind":"X"}}`),
			err:  "cannot get extra resources requirements: cannot unmarshal value from JSON: json: cannot unmarshal number into Go struct field ExtraResourcesRequirement.apiVersion of type string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, withXR(inline(tc.docs, nil)))
			if tc.err != "" {
				sameResponse(t, rsp, fatalResponse(xrState(), "{}", tc.err))
				return
			}
			want := response(xrState(), "{}")
			want.Requirements.Resources = tc.want
			sameResponse(t, rsp, want)
		})
	}
}
