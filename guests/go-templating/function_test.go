package main

import (
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// The cases of upstream's TestRunFunction, against plait's contract.
func TestRunFunction(t *testing.T) {
	const (
		cdMissingName   = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"name":"cool-cd"}}`
		cdMissingKind   = `{"apiVersion":"example.org/v1"}`
		cdWrongTemplate = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"name":"cool-cd","labels":{"belongsTo":{{.invalid-key}}}}}`
		cdMissingKey    = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"name":"cool-cd","labels":{"belongsTo":{{.missing | quote }}}}}`
		cdReadyWrong    = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"cool-cd","gotemplating.fn.crossplane.io/ready":"wrongValue"},"name":"cool-cd"}}`
		cdReadyTrue     = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"cool-cd","gotemplating.fn.crossplane.io/ready":"True"},"name":"cool-cd"}}`
		cdStripped      = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{},"name":"cool-cd"}}`

		xrWithStatus      = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"ready":"true"}}`
		xrStatusFoo       = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"state":{"foo":"bar"}}}`
		xrStatusBaz       = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"state":{"baz":"qux"}}}`
		xrStatusFooBaz    = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"state":{"foo":"bar","baz":"qux"}}}`
		xrAsComposedTmpl  = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"recursive-xr"},"name":"recursive-xr","labels":{"belongsTo":{{.observed.composite.resource.metadata.name|quote}}}},"spec":{"count":2}}`
		xrReadyTrue       = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"True"},"name":"cool-xr"},"spec":{"count":2}}`
		xrReadyFalse      = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"False"},"name":"cool-xr"},"spec":{"count":2}}`
		xrReadyUnspec     = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"Unspecified"},"name":"cool-xr"},"spec":{"count":2}}`
		xrReadyWrong      = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"wrongValue"},"name":"cool-xr"},"spec":{"count":2}}`
		xrReadyAndName    = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"xr-as-composed","gotemplating.fn.crossplane.io/ready":"True"},"name":"cool-xr"},"spec":{"count":2}}`
		xrReadyAndStatus  = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"True"},"name":"cool-xr"},"spec":{"count":2},"status":{"phase":"Ready","message":"Composite resource is ready"}}`
		xrStatusUpdate    = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{"gotemplating.fn.crossplane.io/ready":"False"},"name":"cool-xr"},"spec":{"count":2},"status":{"phase":"Updating","newField":"added"}}`
		invalidYAML       = "\n---\napiVersion: example.org/v1\nkind: CD\nmetadata:\n  name: %!@#$%^&*()_+\n"
		environmentCtx    = `{"apiextensions.crossplane.io/environment":{"userkey/go-template":"apiVersion: example.org/v1\nkind: CD\nmetadata:\n  name: cool-cd\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: cool-cd\n  labels:\n    belongsTo: {{ .observed.composite.resource.metadata.name|quote }}"}}`
		extraResourceItem = `{"apiVersion":"example.org/v1","kind":"CoolExtraResource","metadata":{"name":"cool-extra-resource"},"spec":{}}`
	)

	byName := func(name string) component.ResourceSelector {
		return component.ResourceSelector{APIVersion: "example.org/v1", Kind: "CoolExtraResource", MatchName: ptr(name)}
	}
	withDesired := func(req *component.Request, name, obj string) *component.Request {
		req.Desired.Resources = append(req.Desired.Resources, component.ComposedResource{Name: name, Resource: *resource(obj)})
		return req
	}

	cases := map[string]struct {
		req  *component.Request
		want *component.Response
	}{
		"WrongInputSourceIsFatal": {
			req:  &component.Request{Input: input(map[string]any{"source": "wrong"})},
			want: fatalResponse(component.State{}, "{}", "invalid function input: invalid source: wrong"),
		},
		"NoInputIsFatal": {
			req:  &component.Request{},
			want: fatalResponse(component.State{}, "{}", "invalid function input: source is required"),
		},
		"InlineWithoutTemplateIsFatal": {
			req:  &component.Request{Input: input(map[string]any{"source": "Inline"})},
			want: fatalResponse(component.State{}, "{}", "invalid function input: inline.template or inline.templates should be provided"),
		},
		"FileSystemWithoutDirPathIsFatal": {
			req:  &component.Request{Input: input(map[string]any{"source": "FileSystem"})},
			want: fatalResponse(component.State{}, "{}", "invalid function input: fileSystem.dirPath should be provided"),
		},
		"EnvironmentWithoutKeyIsFatal": {
			req:  &component.Request{Input: input(map[string]any{"source": "Environment"})},
			want: fatalResponse(component.State{}, "{}", "invalid function input: environment.key should be provided"),
		},
		"MissingResourceNameAnnotationIsFatal": {
			req:  &component.Request{Input: inline(cdMissingName, nil)},
			want: fatalResponse(component.State{}, "{}", `"CD" template is missing required "gotemplating.fn.crossplane.io/composition-resource-name" annotation`),
		},
		"ManifestWithoutKindIsFatal": {
			req:  &component.Request{Input: inline(cdMissingKind, nil)},
			want: fatalResponse(component.State{}, "{}", `cannot decode manifest: Object 'Kind' is missing in '{"apiVersion":"example.org/v1"}'`),
		},
		"UnparsableTemplateIsFatal": {
			req:  withXR(inline(cdWrongTemplate, nil)),
			want: fatalResponse(xrState(), "{}", "invalid function input: cannot parse the provided templates: template: manifests:1: bad character U+002D '-'"),
		},
		"RenderedResourceReplacesDesiredOfSameName": {
			req: func() *component.Request {
				r := withDesired(withXR(inline(cdJSON, nil)), "cool-cd", cdJSON)
				r.Meta.Tag = "nochange"
				return r
			}(),
			want: func() *component.Response {
				rsp := response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdStripped)}}}, "{}")
				rsp.Tag = "nochange"
				return rsp
			}(),
		},
		"TemplateRendersObservedComposite": {
			req:  withXR(inline(cdTemplate, nil)),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdRendered)}}}, "{}"),
		},
		"TemplatesFieldRendersLikeTemplate": {
			req:  withXR(input(map[string]any{"source": "Inline", "inline": map[string]any{"templates": []string{cdTemplate}}})),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdRendered)}}}, "{}"),
		},
		"CompositeDocumentUpdatesDesiredStatus": {
			req:  withXR(inline(xrWithStatus, nil)),
			want: response(component.State{Composite: resource(xrWithStatus)}, "{}"),
		},
		"CompositeStatusMergesNested": {
			req: &component.Request{
				Input:    inline(xrStatusBaz, nil),
				Observed: component.State{Composite: resource(xrStatusFoo)},
				Desired:  component.State{Composite: resource(xrStatusFoo)},
			},
			want: response(component.State{Composite: resource(xrStatusFooBaz)}, "{}"),
		},
		"CompositeDocumentsMergeInOrder": {
			req:  withXR(inline(xrStatusFoo+xrStatusBaz, nil)),
			want: response(component.State{Composite: resource(xrStatusFooBaz)}, "{}"),
		},
		"CompositeKindWithNameAnnotationIsComposed": {
			req: withXR(inline(xrAsComposedTmpl, nil)),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "recursive-xr", Resource: *resource(
				`{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{},"name":"recursive-xr","labels":{"belongsTo":"cool-xr"}},"spec":{"count":2}}`)}}}, "{}"),
		},
		"EnvironmentSourceReadsTemplateFromContext": {
			req: func() *component.Request {
				r := withXR(input(map[string]any{"source": "Environment", "environment": map[string]any{"key": "userkey/go-template"}}))
				r.Context = environmentCtx
				return r
			}(),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdRendered)}}}, environmentCtx),
		},
		"EnvironmentSourceWithoutEnvironmentIsFatal": {
			req: &component.Request{Context: "{}", Input: input(map[string]any{"source": "Environment", "environment": map[string]any{"key": "userkey/go-template"}})},
			want: fatalResponse(component.State{}, "{}",
				"invalid function input: cannot read tmpl from the environment: apiextensions.crossplane.io/environment key does not exist in context"),
		},
		"EnvironmentSourceWithoutKeyIsFatal": {
			req: &component.Request{Context: `{"apiextensions.crossplane.io/environment":{}}`, Input: input(map[string]any{"source": "Environment", "environment": map[string]any{"key": "userkey/go-template"}})},
			want: fatalResponse(component.State{}, `{"apiextensions.crossplane.io/environment":{}}`,
				"invalid function input: cannot read tmpl from the environment: key: userkey/go-template does not exist"),
		},
		"EnvironmentSourceNotStringIsFatal": {
			req: &component.Request{Context: `{"apiextensions.crossplane.io/environment":{"k":1}}`, Input: input(map[string]any{"source": "Environment", "environment": map[string]any{"key": "k"}})},
			want: fatalResponse(component.State{}, `{"apiextensions.crossplane.io/environment":{"k":1}}`,
				"invalid function input: cannot read tmpl from the environment: key: k value is not a string"),
		},
		"InvalidReadyAnnotationIsFatal": {
			req:  withXR(inline(cdReadyWrong, nil)),
			want: fatalResponse(xrState(), "{}", `invalid function input: invalid "gotemplating.fn.crossplane.io/ready" annotation value "wrongValue": must be True, False, or Unspecified`),
		},
		"ReadyAnnotationSetsComposedReadiness": {
			req: func() *component.Request {
				r := withXR(inline(cdReadyTrue, nil))
				r.Observed.Resources = []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdJSON)}}
				return r
			}(),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: component.Resource{JSON: cdStripped, Ready: component.ReadyTrue}}}}, "{}"),
		},
		"UnknownMetaKindIsFatal": {
			req:  withXR(inline(metaDoc+`"kind":"InvalidMeta"}`, nil)),
			want: fatalResponse(xrState(), "{}", `invalid kind "InvalidMeta" for apiVersion "meta.gotemplating.fn.crossplane.io/v1alpha1" - must be one of CompositeConnectionDetails, Context or ExtraResources`),
		},
		"ReservedClaimConditionIsFatal": {
			req:  withXR(inline(metaDoc+`"kind":"ClaimConditions","conditions":[{"type":"Ready","status":"False","reason":"InstallFail","message":"I am using a reserved Condition","target":"ClaimAndComposite"}]}`, nil)),
			want: fatalResponse(xrState(), "{}", "cannot set ClaimCondition type: Ready is a reserved Crossplane Condition"),
		},
		"ClaimConditionsBecomeConditions": {
			req: withXR(inline(metaDoc+`"kind":"ClaimConditions","conditions":[{"type":"TestCondition","status":"False","reason":"InstallFail","message":"failed to install","target":"ClaimAndComposite"},{"type":"ConditionTrue","status":"True","reason":"this condition is true","message":"we are true","target":"Composite"},{"type":"DatabaseReady","status":"True","reason":"Ready","message":"Database is ready"}]}`, nil)),
			want: func() *component.Response {
				rsp := response(xrState(), "{}")
				rsp.Conditions = []component.Condition{
					{Type: "TestCondition", Status: component.ConditionFalse, Reason: "InstallFail", Message: ptr("failed to install"), Target: ptr(component.TargetComposite)},
					{Type: "ConditionTrue", Status: component.ConditionTrue, Reason: "this condition is true", Message: ptr("we are true"), Target: ptr(component.TargetComposite)},
					{Type: "DatabaseReady", Status: component.ConditionTrue, Reason: "Ready", Message: ptr("Database is ready"), Target: ptr(component.TargetComposite)},
				}
				return rsp
			}(),
		},
		"CompositeConnectionDetailsSetXRDetails": {
			req:  withXR(inline(metaDoc+`"kind":"CompositeConnectionDetails","data":{"key":"dmFsdWU="}}`, nil)),
			want: response(component.State{Composite: &component.Resource{JSON: xrJSON, ConnectionDetails: []component.ConnectionDetail{{Key: "key", Value: []byte("value")}}}}, "{}"),
		},
		"CompositeConnectionDetailsMerge": {
			req: withXR(inline(metaDoc+`"kind":"CompositeConnectionDetails","data":{"key":"dmFsdWU="}}`+metaDoc+`"kind":"CompositeConnectionDetails","data":{"key2":"ZXVsYXY="}}`, nil)),
			want: response(component.State{Composite: &component.Resource{JSON: xrJSON, ConnectionDetails: []component.ConnectionDetail{
				{Key: "key", Value: []byte("value")}, {Key: "key2", Value: []byte("eulav")},
			}}}, "{}"),
		},
		"ContextWithNonObjectDataIsFatal": {
			req:  withXR(inline(metaDoc+`"kind":"Context","data": 1 }`, nil)),
			want: fatalResponse(xrState(), "{}", "cannot get Contexts from input: cannot unmarshal value from JSON: json: cannot unmarshal number into Go value of type map[string]interface {}"),
		},
		"ContextDocumentSetsContext": {
			req:  withXR(inline(metaDoc+`"kind":"Context","data":{"apiextensions.crossplane.io/environment":{ "new":"value"}}}`, nil)),
			want: response(xrState(), `{"apiextensions.crossplane.io/environment":{"new":"value"}}`),
		},
		"ExtraResourcesBecomeRequirements": {
			req: withDesired(withXR(inline(metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"cool-extra-resource"}}}
`+metaDoc+`"kind":"ExtraResources","requirements":{"another-cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchLabels":{"key": "value"}},"yet-another-cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"foo"}}}
`+metaDoc+`"kind":"ExtraResources","requirements":{"all-cool-resources":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchLabels":{}}}}`, nil)), "cool-cd", cdJSON),
			want: func() *component.Response {
				rsp := response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdJSON)}}}, "{}")
				rsp.Requirements.Resources = []component.ResourceRequirement{
					{Name: "all-cool-resources", Selector: component.ResourceSelector{APIVersion: "example.org/v1", Kind: "CoolExtraResource", MatchLabels: [][2]string{}}},
					{Name: "another-cool-extra-resource", Selector: component.ResourceSelector{APIVersion: "example.org/v1", Kind: "CoolExtraResource", MatchLabels: [][2]string{{"key", "value"}}}},
					{Name: "cool-extra-resource", Selector: byName("cool-extra-resource")},
					{Name: "yet-another-cool-extra-resource", Selector: byName("foo")},
				}
				return rsp
			}(),
		},
		"DuplicateExtraResourceKeyIsFatal": {
			req: withDesired(withXR(inline(metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"cool-extra-resource"}}}
`+metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"another-cool-extra-resource"}}}`, nil)), "cool-cd", cdJSON),
			want: fatalResponse(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "cool-cd", Resource: *resource(cdJSON)}}}, "{}",
				`duplicate extra resource key "cool-extra-resource"`),
		},
		"InvalidTemplateOptionIsFatal": {
			req:  &component.Request{Input: inline(cdMissingKey, map[string]any{"options": []string{"missingoption=nothing"}}), Observed: xrState()},
			want: fatalResponse(component.State{}, "{}", "cannot apply template options: panic occurred while applying template options: unrecognized option: missingoption=nothing"),
		},
		"CompositeReadyTrue": {
			req:  withXR(inline(xrReadyTrue, nil)),
			want: response(component.State{Composite: &component.Resource{JSON: xrJSON, Ready: component.ReadyTrue}}, "{}"),
		},
		"CompositeReadyFalse": {
			req:  withXR(inline(xrReadyFalse, nil)),
			want: response(component.State{Composite: &component.Resource{JSON: xrJSON, Ready: component.ReadyFalse}}, "{}"),
		},
		"CompositeReadyUnspecified": {
			req:  withXR(inline(xrReadyUnspec, nil)),
			want: response(component.State{Composite: &component.Resource{JSON: xrJSON, Ready: component.ReadyUnspecified}}, "{}"),
		},
		"CompositeReadyInvalidIsFatal": {
			req:  withXR(inline(xrReadyWrong, nil)),
			want: fatalResponse(xrState(), "{}", `invalid function input: invalid "gotemplating.fn.crossplane.io/ready" annotation value "wrongValue": must be True, False, or Unspecified`),
		},
		"CompositeWithNameAnnotationIsComposedWithReadiness": {
			req: withXR(inline(xrReadyAndName, nil)),
			want: response(component.State{Composite: resource(xrJSON), Resources: []component.ComposedResource{{Name: "xr-as-composed", Resource: component.Resource{
				JSON: `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"annotations":{},"name":"cool-xr"},"spec":{"count":2}}`, Ready: component.ReadyTrue,
			}}}}, "{}"),
		},
		"CompositeReadyWithStatus": {
			req: withXR(inline(xrReadyAndStatus, nil)),
			want: response(component.State{Composite: &component.Resource{
				JSON:  `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"phase":"Ready","message":"Composite resource is ready"}}`,
				Ready: component.ReadyTrue,
			}}, "{}"),
		},
		"CompositeStatusMergesWithDesired": {
			req: &component.Request{Input: inline(xrStatusUpdate, nil), Observed: xrState(), Desired: component.State{Composite: resource(xrStatusFoo)}},
			want: response(component.State{Composite: &component.Resource{
				JSON:  `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2},"status":{"state":{"foo":"bar"},"phase":"Updating","newField":"added"}}`,
				Ready: component.ReadyFalse,
			}}, "{}"),
		},
		"MissingKeyErrorOptionIsFatal": {
			req: &component.Request{Input: inline(cdMissingKey, map[string]any{"options": []string{"missingkey=error"}}), Observed: xrState()},
			want: fatalResponse(component.State{}, "{}",
				`cannot execute template: template: manifests:1:96: executing "manifests" at <.missing>: map has no entry for key "missing"`),
		},
		"YAMLErrorNamesLineAndDocument": {
			req: withXR(inline(invalidYAML, nil)),
			want: fatalResponse(xrState(), "{}",
				"cannot decode manifest: error converting YAML to JSON: yaml: line 6 (document 1, line 4) near: 'name: %!@#$%^&*()_+': found character that cannot start any token"),
		},
		"RequiredResourcesGoIntoContext": {
			req: &component.Request{
				Input:             inline(metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"cool-extra-resource"}}}`, nil),
				RequiredResources: []component.RequiredResources{{Name: "cool-extra-resource", Items: []string{extraResourceItem}}},
			},
			want: func() *component.Response {
				rsp := response(component.State{Composite: resource("{}")}, `{"apiextensions.crossplane.io/extra-resources":{"cool-extra-resource":{"items":[{"resource":`+extraResourceItem+`}]}}}`)
				rsp.Requirements.Resources = []component.ResourceRequirement{{Name: "cool-extra-resource", Selector: byName("cool-extra-resource")}}
				return rsp
			}(),
		},
		"RequiredResourcesMergeWithContext": {
			req: &component.Request{
				Input:             inline(metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","matchName":"cool-extra-resource"}}}`, nil),
				Context:           `{"apiextensions.crossplane.io/extra-resources":{"existing-extra-resource":{"items":[{"resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","metadata":{"name":"existing-extra-resource"},"spec":{}}}]}}}`,
				RequiredResources: []component.RequiredResources{{Name: "cool-extra-resource", Items: []string{extraResourceItem}}},
			},
			want: func() *component.Response {
				rsp := response(component.State{Composite: resource("{}")}, `{"apiextensions.crossplane.io/extra-resources":{
					"existing-extra-resource":{"items":[{"resource":{"apiVersion":"example.org/v1","kind":"CoolExtraResource","metadata":{"name":"existing-extra-resource"},"spec":{}}}]},
					"cool-extra-resource":{"items":[{"resource":`+extraResourceItem+`}]}}}`)
				rsp.Requirements.Resources = []component.ResourceRequirement{{Name: "cool-extra-resource", Selector: byName("cool-extra-resource")}}
				return rsp
			}(),
		},
		"NamespacedRequirementKeepsNamespace": {
			req: &component.Request{
				Input:             inline(metaDoc+`"kind":"ExtraResources","requirements":{"cool-extra-resource":{"apiVersion":"v1","kind":"ConfigMap","matchName":"cool-extra-resource","namespace":"default"}}}`, nil),
				RequiredResources: []component.RequiredResources{{Name: "cool-extra-resource", Items: []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cool-extra-resource","namespace":"default"},"data":{"a":"b"}}`}}},
			},
			want: func() *component.Response {
				rsp := response(component.State{Composite: resource("{}")}, `{"apiextensions.crossplane.io/extra-resources":{"cool-extra-resource":{"items":[{"resource":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cool-extra-resource","namespace":"default"},"data":{"a":"b"}}}]}}}`)
				rsp.Requirements.Resources = []component.ResourceRequirement{{Name: "cool-extra-resource", Selector: component.ResourceSelector{
					APIVersion: "v1", Kind: "ConfigMap", MatchName: ptr("cool-extra-resource"), Namespace: ptr("default"),
				}}}
				return rsp
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want.Tag = tc.req.Meta.Tag
			sameResponse(t, run(t, tc.req), tc.want)
		})
	}
}
